import Foundation
import TetherJSON
import TetherProtocol
import TetherTransport

/// Plain HTTP on the WebSocket port: the HTTP API (`HTTPAPI`), health, metrics, the browser
/// files (the dashboard, `tether.js`, the examples), room administration (`GET /rooms`, `DELETE /rooms/NAME`) and, on
/// a cluster node, the cluster's view from here. Called on a socket shard's thread; room
/// administration runs on the room service's queue, which answers from there.
struct HTTPRoutes {
    let rooms: RoomService
    var metrics: ServerMetrics { rooms.metrics }
    var cluster: ClusterNode? = nil
    /// The socket server, for its shards' figures (nil in process, with no sockets).
    var transport: WebSocketServer? = nil
    /// The hub of the shard these routes serve, where the HTTP API's sessions run.
    var hub: SessionHub? = nil
    /// `tether webhooks` (nil in process).
    var webhooks: WebhookAdministration? = nil
    let apiLimits = APIRateLimits()

    static let roomsPath = "/rooms"

    func answer(_ request: HTTPRequest, responder: HTTPResponder) {
        if HTTPAPI(rooms: rooms, hub: hub, limits: apiLimits, cluster: cluster).answer(request, responder: responder, from: request.remoteAddress) { return }
        if request.path == "/webhooks" || request.path.hasPrefix("/webhooks/") {
            administerWebhooks(request, responder: responder)
            return
        }
        if request.path == Self.roomsPath || request.path.hasPrefix(Self.roomsPath + "/") {
            administerRooms(request, responder: responder)
            return
        }
        guard request.method == "GET" else {
            responder.respond(Self.headers(HTTPResponse(status: 405, text: "method not allowed\n", headers: ["Allow": "GET"])))
            return
        }
        responder.respond(Self.headers(get(request.path)))
    }

    /// What `OPTIONS` answers for `path`.
    func allowedMethods(forPath path: String) -> String {
        if case .methodNotAllowed(let allow) = APIRoute(method: "OPTIONS", path: path) { return allow + ", OPTIONS" }
        return "GET, HEAD, OPTIONS"
    }

    private func get(_ path: String) -> HTTPResponse {
        switch path {
        case "/healthz":
            // A cluster node that lost NATS still serves joins but can't take actions.
            if let cluster, !cluster.messaging.isConnected {
                return HTTPResponse(status: 503, text: "not connected to the cluster\n")
            }
            return HTTPResponse(status: 200, text: "ok")
        case "/metrics":
            metrics.rooms.set(Double(rooms.roomCount))
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render() + shardMetrics())
        case "/cluster":
            guard let cluster else { return HTTPResponse(status: 404, text: "not a cluster node (start with --nats)\n") }
            var status = cluster.statusJSON
            if case .object(var fields) = status, let shards = transport?.shardStatistics {
                fields["shards"] = .array(shards.map(\.json))
                status = .object(fields)
            }
            return HTTPResponse(status: 200, contentType: "application/json", body: status.encoded())
        default:
            return WebAssets.response(for: path) ?? .notFound
        }
    }

    /// Each socket shard's connections and CPU time, in the exposition format.
    private func shardMetrics() -> [UInt8] {
        guard let shards = transport?.shardStatistics else { return [] }
        var text = "# HELP tether_shard_connections Open WebSocket connections served by each socket shard (thread).\n# TYPE tether_shard_connections gauge\n"
        for (index, shard) in shards.enumerated() { text += "tether_shard_connections{shard=\"\(index)\"} \(shard.connections)\n" }
        text += "# HELP tether_shard_cpu_seconds_total CPU time used by each socket shard's thread.\n# TYPE tether_shard_cpu_seconds_total counter\n"
        for (index, shard) in shards.enumerated() { text += "tether_shard_cpu_seconds_total{shard=\"\(index)\"} \(shard.cpuSeconds)\n" }
        return Array(text.utf8)
    }

    private static func headers(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
    }

    // MARK: Rooms

    /// `GET /rooms` lists every room (in memory and stored); `DELETE /rooms/NAME` deletes one
    /// (NAME percent-encoded: `/rooms/todo%3Ateam-a`). With token secrets both need `Authorization: Bearer TOKEN`, a
    /// token with the admin claim, as the overview does; without, whoever may connect may (a
    /// loopback daemon, or one started with --allow-anonymous). Answers are JSON.
    private func administerRooms(_ request: HTTPRequest, responder: HTTPResponder) {
        let rooms = self.rooms
        let token = Self.bearerToken(request.authorization)
        let facts = Admission.Facts(now: rooms.runtime.clock.secondsSince1970)
        if case .failure(let refusal) = Admission.decide(.administer(token: token), facts: facts, settings: rooms.configuration) {
            responder.respond(Self.refusal(refusal))
            return
        }
        switch request.method {
        case "GET" where request.path == Self.roomsPath:
            rooms.queue.execute { listRooms(responder) }
        case "DELETE" where request.path.count > Self.roomsPath.count + 1:
            // The transport hands the path over percent-decoded: the rest is the room's name.
            let name = String(request.path.dropFirst(Self.roomsPath.count + 1))
            rooms.queue.execute { responder.respond(Self.deletion(name, rooms.deleteRoom(named: name))) }
        default:
            responder.respond(Self.error(405, .badMessage, "GET /rooms lists the rooms; DELETE /rooms/NAME deletes one",
                                         headers: ["Allow": request.path == Self.roomsPath ? "GET, HEAD" : "GET, HEAD, DELETE"]))
        }
    }

    /// `tether webhooks`: the admin token as for rooms; reads wait for the store, off this thread.
    private func administerWebhooks(_ request: HTTPRequest, responder: HTTPResponder) {
        let facts = Admission.Facts(now: rooms.runtime.clock.secondsSince1970)
        if case .failure(let refusal) = Admission.decide(.administer(token: Self.bearerToken(request.authorization)), facts: facts, settings: rooms.configuration) {
            return responder.respond(Self.refusal(refusal))
        }
        guard let webhooks else { return responder.respond(Self.error(404, .unknownRoom, "no webhooks here")) }
        let parts = request.path.split(separator: "/").map(String.init)
        switch (request.method, parts.count, parts.last) {
        case ("GET", 1, _):
            rooms.queue.execute { responder.respond(Self.json(200, webhooks.list())) }
        case ("POST", 3, "retry"):
            rooms.queue.execute {
                let (status, body) = webhooks.retry(parts[1])
                responder.respond(Self.json(status, body))
            }
        case ("POST", 3, "test"):
            Task {
                let (status, body) = await webhooks.test(parts[1])
                responder.respond(Self.json(status, body))
            }
        default:
            responder.respond(Self.error(405, .badMessage, "GET /webhooks lists the endpoints; POST /webhooks/NAME/retry or /test acts on one",
                                         headers: ["Allow": parts.count == 1 ? "GET, HEAD" : "POST"]))
        }
    }

    /// The token of an `Authorization: Bearer TOKEN` header.
    private static func bearerToken(_ header: String?) -> String? {
        guard let header, header.lowercased().hasPrefix("bearer ") else { return nil }
        return String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }

    /// 401 without a valid token (with the challenge), 403 when it does not allow this.
    static func refusal(_ refusal: Admission.Refusal) -> HTTPResponse {
        let challenge = ["WWW-Authenticate": "Bearer realm=\"tetherd\""]
        switch refusal.reason {
        case .noToken: return error(401, .unauthorized, refusal.message + ": send it as Authorization: Bearer TOKEN", headers: challenge)
        case .badToken: return error(401, .unauthorized, refusal.message, headers: challenge)
        case .forbidden: return error(403, .unauthorized, refusal.message)
        case .limited: return error(429, .rateLimited, refusal.message, headers: ["Retry-After": "1"])
        case .keysPending: return error(503, .unavailable, refusal.message, headers: ["Retry-After": "1"])
        }
    }

    /// On the room service's queue.
    private func listRooms(_ responder: HTTPResponder) {
        let list = rooms.roomList()
        guard let cluster else {
            responder.respond(Self.json(200, ["rooms": Self.encode(list)]))
            return
        }
        // The rooms this node holds, and those the cluster's snapshots hold (read from JetStream).
        cluster.snapshotRooms { stored in
            let listed = Set(list.map(\.name))
            let more = stored.filter { !listed.contains($0.name) }
            let all = (list + more).sorted { $0.name < $1.name }
            responder.respond(Self.json(200, ["rooms": Self.encode(all), "node": .string(cluster.name)]))
        }
    }

    private static func deletion(_ name: String, _ result: RoomDeletion) -> HTTPResponse {
        switch result {
        case .deleted(let wasInMemory, let subscribers):
            return json(200, ["deleted": .string(name), "wasInMemory": .bool(wasInMemory), "subscribers": .int(subscribers)])
        case .notFound(let reason):
            return error(404, .unknownRoom, reason)
        case .refused(let reason):
            return error(409, .badMessage, reason)
        case .unsupported(let reason):
            return error(501, .unavailable, reason)
        }
    }

    private static func encode(_ rooms: [RoomListEntry]) -> JSON {
        (try? JSONValueEncoder().encode(rooms)) ?? .array([])
    }

    /// The HTTP API's error shape (`APIError`), with `error` as before it for older clients.
    private static func error(_ status: Int, _ code: ErrorCode, _ message: String, headers: [String: String] = [:]) -> HTTPResponse {
        json(status, ["code": .string(code.rawValue), "message": .string(message), "applied": false, "error": .string(message)], headers: headers)
    }

    private static func json(_ status: Int, _ body: JSON, headers: [String: String] = [:]) -> HTTPResponse {
        var headers = headers
        headers["Cache-Control"] = "no-store"
        return Self.headers(HTTPResponse(status: status, contentType: "application/json", body: body.encoded(), headers: headers))
    }
}
