import TetherJSON
import Synchronization

/// One event bound for one endpoint.
struct WebhookDelivery: Sendable, Equatable {
    let endpoint: String
    let event: WebhookEvent

    /// As a cluster's log entry carries it: `{"endpoint", "type", "room", "id", "body"}`, the body
    /// as text (the bytes sent and signed).
    var json: JSON {
        ["endpoint": .string(endpoint), "type": .string(event.type.rawValue), "room": .string(event.room), "id": .string(event.id),
         "body": .string(String(decoding: event.body, as: UTF8.self))]
    }

    init(endpoint: String, event: WebhookEvent) {
        self.endpoint = endpoint
        self.event = event
    }

    init?(json: JSON) {
        guard let endpoint = json["endpoint"]?.stringValue, let type = json["type"]?.stringValue.flatMap(WebhookEventType.init(rawValue:)),
              let room = json["room"]?.stringValue, let id = json["id"]?.stringValue, let body = json["body"]?.stringValue
        else { return nil }
        self.init(endpoint: endpoint, event: WebhookEvent(type: type, room: room, id: id, body: Array(body.utf8)))
    }
}

/// An outbox row: a delivery waiting to be sent, retried or dead-lettered.
struct WebhookOutboxRow: Sendable, Equatable {
    var seq: Int
    var delivery: WebhookDelivery
    /// Seconds since 1970.
    var created: Int
    var attempts = 0
    var nextAttempt: Int
}

/// An endpoint's figures, for `GET /webhooks`, the dashboard and metrics.
struct WebhookEndpointStatus: Sendable, Equatable {
    var pending = 0
    var dead = 0
    var lastError: String?
    /// Seconds since 1970 of that error.
    var lastErrorAt: Int?
}

/// Where deliveries wait: the room store's table on a node with a data directory (a step's
/// `action.applied` written in the step's own transaction), memory otherwise (lost with the
/// process: at most once across restarts).
protocol WebhookOutbox: AnyObject, Sendable {
    func add(_ deliveries: [WebhookDelivery], now: Int)
    /// Up to `limit` due rows, oldest first, only the oldest pending row of each (endpoint, room):
    /// one room's events reach an endpoint in order, and a failing one holds back only its room.
    func due(now: Int, limit: Int) -> [WebhookOutboxRow]
    func delivered(_ seq: Int)
    func retry(_ seq: Int, attempts: Int, at time: Int, error: String, now: Int)
    func dead(_ seq: Int, attempts: Int, error: String, now: Int)
    func status() -> [String: WebhookEndpointStatus]
    /// Dead rows of `endpoint` pending again now; how many.
    func revive(endpoint: String, now: Int) -> Int
    /// Whether this node sends what the outbox holds (on a cluster, one node does).
    var isDelivering: Bool { get }
    /// On a cluster, the node that delivers, as last seen (nil: unknown, or not a cluster).
    var deliveringNode: String? { get }
}

extension WebhookOutbox {
    var isDelivering: Bool { true }
    var deliveringNode: String? { nil }
}

/// The outbox of a node without a data directory.
final class MemoryWebhookOutbox: WebhookOutbox {
    private struct State {
        var rows: [Int: WebhookOutboxRow] = [:]
        var dead: [Int: WebhookOutboxRow] = [:]
        var nextSeq = 1
        var statuses: [String: WebhookEndpointStatus] = [:]
    }
    private let state = Mutex(State())
    /// Past it new events are dropped (and counted): a dead receiver must not fill memory.
    let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    func add(_ deliveries: [WebhookDelivery], now: Int) {
        state.withLock { state in
            for delivery in deliveries where state.rows.count < capacity {
                state.rows[state.nextSeq] = WebhookOutboxRow(seq: state.nextSeq, delivery: delivery, created: now, nextAttempt: now)
                state.nextSeq += 1
            }
        }
    }

    func due(now: Int, limit: Int) -> [WebhookOutboxRow] {
        state.withLock { state in
            var heads: [String: WebhookOutboxRow] = [:]
            for row in state.rows.values {
                let key = row.delivery.endpoint + "\u{0}" + row.delivery.event.room
                if let head = heads[key], head.seq < row.seq { continue }
                heads[key] = row
            }
            return heads.values.filter { $0.nextAttempt <= now }.sorted { $0.seq < $1.seq }.prefix(limit).map { $0 }
        }
    }

    func delivered(_ seq: Int) { state.withLock { _ = $0.rows.removeValue(forKey: seq) } }

    func retry(_ seq: Int, attempts: Int, at time: Int, error: String, now: Int) {
        state.withLock { state in
            guard var row = state.rows[seq] else { return }
            row.attempts = attempts
            row.nextAttempt = time
            state.rows[seq] = row
            state.statuses[row.delivery.endpoint, default: .init()].lastError = error
            state.statuses[row.delivery.endpoint, default: .init()].lastErrorAt = now
        }
    }

    func dead(_ seq: Int, attempts: Int, error: String, now: Int) {
        state.withLock { state in
            guard var row = state.rows.removeValue(forKey: seq) else { return }
            row.attempts = attempts
            state.dead[seq] = row
            state.statuses[row.delivery.endpoint, default: .init()].lastError = error
            state.statuses[row.delivery.endpoint, default: .init()].lastErrorAt = now
        }
    }

    func status() -> [String: WebhookEndpointStatus] {
        state.withLock { state in
            var statuses = state.statuses.mapValues { WebhookEndpointStatus(lastError: $0.lastError, lastErrorAt: $0.lastErrorAt) }
            for row in state.rows.values { statuses[row.delivery.endpoint, default: .init()].pending += 1 }
            for row in state.dead.values { statuses[row.delivery.endpoint, default: .init()].dead += 1 }
            return statuses
        }
    }

    // For a cluster's delivering node, whose rows come from the webhook stream (their sequences).

    /// A row read from elsewhere, under its own `seq`; one known already is left as it is.
    func insert(_ row: WebhookOutboxRow, dead: Bool) {
        state.withLock { state in
            guard state.rows[row.seq] == nil, state.dead[row.seq] == nil, state.rows.count < capacity else { return }
            if dead { state.dead[row.seq] = row } else { state.rows[row.seq] = row }
        }
    }

    /// A pending row taken out (to be recorded elsewhere).
    func remove(_ seq: Int) -> WebhookOutboxRow? { state.withLock { $0.rows.removeValue(forKey: seq) } }

    /// The dead rows of `endpoint`, taken out.
    func removeDead(endpoint: String) -> [WebhookOutboxRow] {
        state.withLock { state in
            let rows = state.dead.values.filter { $0.delivery.endpoint == endpoint }.sorted { $0.seq < $1.seq }
            for row in rows { state.dead[row.seq] = nil }
            return rows
        }
    }

    func noteError(endpoint: String, _ error: String, at time: Int) {
        state.withLock { state in
            state.statuses[endpoint, default: .init()].lastError = error
            state.statuses[endpoint, default: .init()].lastErrorAt = time
        }
    }

    /// Everything forgotten: another node delivers now.
    func removeAll() {
        state.withLock { state in
            state.rows.removeAll()
            state.dead.removeAll()
        }
    }

    func revive(endpoint: String, now: Int) -> Int {
        state.withLock { state in
            let revived = state.dead.values.filter { $0.delivery.endpoint == endpoint }
            for var row in revived {
                state.dead[row.seq] = nil
                row.attempts = 0
                row.nextAttempt = now
                state.rows[row.seq] = row
            }
            return revived.count
        }
    }
}
