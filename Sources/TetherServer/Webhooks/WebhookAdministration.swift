import Foundation
import TetherJSON

/// `GET /webhooks`, `POST /webhooks/NAME/retry`, `POST /webhooks/NAME/test`: the endpoints with
/// their queues, dead letters revived, a test event sent now (`tether webhooks`). Reads wait for
/// the store: called off the socket threads (the room service's queue, or a task).
struct WebhookAdministration: Sendable {
    let deliverer: WebhookDeliverer
    let recorder: WebhookRecorder

    func list() -> JSON {
        // On a cluster only the delivering node knows the queues: `delivering` says whether this
        // is it, `deliveredBy` which node is.
        var answer: [String: JSON] = ["webhooks": .array(Self.describe(recorder.current, statuses: recorder.outbox.status(), gone: deliverer.goneEndpoints)),
                                      "delivering": .bool(recorder.outbox.isDelivering)]
        if let node = recorder.outbox.deliveringNode { answer["deliveredBy"] = .string(node) }
        return .object(answer)
    }

    /// One object per endpoint: its settings, queue, dead letters and last error.
    static func describe(_ endpoints: [WebhookEndpoint], statuses: [String: WebhookEndpointStatus], gone: Set<String>) -> [JSON] {
        endpoints.map { endpoint in
            let status = statuses[endpoint.name] ?? WebhookEndpointStatus()
            var fields: [String: JSON] = [
                "name": .string(endpoint.name), "url": .string(endpoint.url.absoluteString),
                "events": .array(endpoint.events.map(\.rawValue).sorted().map(JSON.string)), "rooms": .array(endpoint.rooms.map(JSON.string)),
                "pending": .int(status.pending), "dead": .int(status.dead), "disabled": .bool(gone.contains(endpoint.name)),
            ]
            if let error = status.lastError { fields["lastError"] = .string(error) }
            if let at = status.lastErrorAt { fields["lastErrorAt"] = .int(at) }
            return .object(fields)
        }
    }

    func retry(_ name: String) -> (status: Int, body: JSON) {
        guard recorder.current.contains(where: { $0.name == name }) else { return (404, Self.unknown(name)) }
        guard recorder.outbox.isDelivering else {
            let where_ = recorder.outbox.deliveringNode.map { "node \($0) delivers them" } ?? "another node delivers them"
            let message = "this node holds no dead letters: \(where_); ask it"
            return (409, ["code": "unavailable", "message": .string(message), "applied": false, "error": .string(message)])
        }
        return (200, ["endpoint": .string(name), "revived": .int(deliverer.revive(name))])
    }

    /// A `webhook.test` event, signed and sent at once, outside the outbox.
    func test(_ name: String) async -> (status: Int, body: JSON) {
        guard let endpoint = recorder.current.first(where: { $0.name == name }) else { return (404, Self.unknown(name)) }
        let now = Date().timeIntervalSince1970
        let body: JSON = ["type": "webhook.test", "timestamp": .string(WebhookEvent.timestamp(now)), "data": ["endpoint": .string(name)]]
        let event = WebhookEvent(type: .roomCreated, room: "", id: "msg_test_\(Int(now * 1000))", body: body.encoded())
        let started = ContinuousClock.now
        let outcome = await deliverer.send(event, to: endpoint)
        let elapsed = ContinuousClock.now - started
        let milliseconds = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        switch outcome {
        case .status(let status, _): return (200, ["endpoint": .string(name), "status": .int(status), "milliseconds": .int(milliseconds)])
        case .failed(let why): return (200, ["endpoint": .string(name), "error": .string(why), "milliseconds": .int(milliseconds)])
        }
    }

    private static func unknown(_ name: String) -> JSON {
        let message = "no webhook endpoint \(name)"
        return ["code": "unknown_room", "message": .string(message), "applied": false, "error": .string(message)]
    }
}
