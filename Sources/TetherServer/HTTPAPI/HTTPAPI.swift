import TetherContract
import TetherJSON
import TetherProtocol
import TetherState
import TetherTransport

/// The HTTP API for backends (docs/HTTP-API.md): run an action, read a room, list its members,
/// follow it as Server-Sent Events, describe the kinds, and the OpenAPI document of all that.
/// Each request becomes a short session on this socket shard's hub, so the WebSocket rules
/// (tokens, limits, numbered actions, a cluster's owner) hold unchanged. On the shard's thread.
struct HTTPAPI {
    let rooms: RoomService
    /// The hub of the shard the request arrived on (nil in process, with no sockets).
    let hub: SessionHub?
    /// That shard's callers' rate buckets.
    let limits: APIRateLimits
    /// This node's cluster, if any (a room's history is read from its log there).
    var cluster: ClusterNode? = nil

    /// How long an action or read may take before it is answered 504.
    static let answerTimeout: Duration = .seconds(10)
    static let maxIdempotencyKeyBytes = 64

    /// Answers `request` if it is the API's; false for other paths.
    func answer(_ request: HTTPRequest, responder: HTTPResponder, from address: String) -> Bool {
        guard let route = APIRoute(method: request.method, path: request.path) else { return false }
        switch route {
        case .openAPI:
            responder.respond(APIError.json(200, OpenAPIDocument.document(kinds: rooms.registry.allKinds)))
        case .methodNotAllowed(let allow):
            let error = ProtocolError(.badMessage, "\(request.method) is not a method of \(request.path) (it takes \(allow))")
            responder.respond(APIError.response(error, status: 405).adding(["Allow": allow]))
        case .kinds(let kind):
            guard withinRate("address " + address, responder: responder, room: nil) else { return true }
            run(.describe(kind: kind), token: nil, responder: responder, from: address)
        case .act(let room, let action):
            act(room: room, action: action, request, responder: responder, from: address)
        case .read(let room):
            guard let kind = admit(room, request, responder: responder, mustExist: true, from: address) else { return true }
            run(.read(room: room, kind: kind.name, ifNoneMatch: request.headers["if-none-match"]), token: Self.bearerToken(request.authorization),
                responder: responder, from: address)
        case .members(let room):
            guard let kind = admit(room, request, responder: responder, mustExist: true, from: address) else { return true }
            guard kind.hasPresence else {
                responder.respond(APIError.response(ProtocolError(.unknownRoom, "\(kind.name) rooms keep no presence", room: room)))
                return true
            }
            run(.members(room: room), token: Self.bearerToken(request.authorization), responder: responder, from: address)
        case .events(let room):
            events(room: room, request, responder: responder, from: address)
        case .history(let room):
            guard administers(request, responder: responder) else { return true }
            let rooms = self.rooms, cluster = self.cluster
            rooms.queue.execute {
                RoomHistoryAnswer.answer(room: room, query: request.query, rooms: rooms, cluster: cluster) { responder.respond($0) }
            }
        case .stateAt(let room):
            guard administers(request, responder: responder) else { return true }
            let rooms = self.rooms, cluster = self.cluster
            rooms.queue.execute { RoomHistoryAnswer.state(room: room, query: request.query, rooms: rooms, cluster: cluster) { responder.respond($0) } }
        case .export(let room):
            guard administers(request, responder: responder) else { return true }
            let rooms = self.rooms, cluster = self.cluster
            rooms.queue.execute { RoomExportAnswer.answer(room: room, query: request.query, rooms: rooms, cluster: cluster) { responder.respond($0) } }
        case .fork(let room):
            guard administers(request, responder: responder) else { return true }
            let rooms = self.rooms, cluster = self.cluster
            rooms.queue.execute {
                if let cluster { return ClusterFork.fork(room, query: request.query, rooms: rooms, node: cluster) { responder.respond($0) } }
                rooms.fork(room, query: request.query) { responder.respond($0) }
            }
        }
        return true
    }

    private func act(room: String, action: String, _ request: HTTPRequest, responder: HTTPResponder, from address: String) {
        guard admit(room, request, responder: responder, mustExist: false, from: address) != nil else { return }
        let args: JSON?
        switch APIArguments.parse(request.body) {
        case .success(let parsed): args = parsed
        case .failure(let error): return responder.respond(APIError.response(ProtocolError(error.code, error.message, room: room)))
        }
        let idempotency: APIExchange.Idempotency?
        switch APIArguments.idempotency(key: request.headers["idempotency-key"], client: request.headers["tether-client"]) {
        case .success(let parsed): idempotency = parsed
        case .failure(let error): return responder.respond(APIError.response(ProtocolError(error.code, error.message, room: room)))
        }
        run(.act(room: room, action: action, args: args, idempotency: idempotency), token: Self.bearerToken(request.authorization),
            responder: responder, from: address)
    }

    private func events(room: String, _ request: HTTPRequest, responder: HTTPResponder, from address: String) {
        guard admit(room, request, responder: responder, mustExist: false, from: address) != nil else { return }
        guard let hub else { return responder.respond(APIError.json(503, [:])) }
        var since: ResumePoint?
        if let last = request.headers["last-event-id"] ?? APIArguments.queryValue("since", in: request.query), !last.isEmpty {
            guard let point = APIArguments.resumePoint(last) else {
                let error = ProtocolError(.badMessage, "Last-Event-ID \(last) is not EPOCH.VERSION, an id this stream sent", room: room)
                return responder.respond(APIError.response(error))
            }
            since = point
        }
        let watch = APIArguments.queryValue("presence", in: request.query) == "watch"
        let connection = SSEConnection(room: room, from: address, hub: hub, responder: responder)
        connection.start(join: .join(room: room, id: APIExchange.joinID, since: since, token: Self.bearerToken(request.authorization),
                                     watchPresence: watch))
    }

    private func run(_ exchange: APIExchange.Request, token: String?, responder: HTTPResponder, from address: String) {
        guard let hub else { return responder.respond(APIError.json(503, [:])) }
        let connection = APIExchangeConnection(APIExchange(exchange, token: token), from: address, hub: hub, responder: responder)
        connection.start(timeout: Self.answerTimeout)
    }

    /// The room's kind, if the request may go on: a room of a shared kind, with tokens a token
    /// that verifies (401 here; what it allows is the session's to decide, 403), and a caller
    /// within its rate.
    private func admit(_ room: String, _ request: HTTPRequest, responder: HTTPResponder, mustExist: Bool, from address: String) -> ViewModelKind? {
        let kind: ViewModelKind
        switch rooms.kind(forRoom: room) {
        case .success(let found): kind = found
        case .failure(let error):
            responder.respond(APIError.response(error))
            return nil
        }
        guard kind.scope == .shared else {
            let error = ProtocolError(.unknownRoom, "\(kind.name) rooms are per connection: each WebSocket connection has its own, HTTP none", room: room)
            responder.respond(APIError.response(error))
            return nil
        }
        let token = Self.bearerToken(request.authorization)
        let facts = Admission.Facts(now: rooms.runtime.clock.secondsSince1970)
        var caller = "address " + address
        switch Admission.decide(.join(room: room, kind: kind, token: token), facts: facts, settings: rooms.configuration) {
        case .failure(let refusal) where refusal.reason == .noToken || refusal.reason == .badToken:
            let message = refusal.reason == .noToken ? refusal.message + ": send it as Authorization: Bearer TOKEN" : refusal.message
            responder.respond(APIError.response(ProtocolError(.unauthorized, message, room: room), status: 401))
            return nil
        case .success(.token(let claims)):
            caller = "subject " + claims.subject
        default:
            break
        }
        guard withinRate(caller, responder: responder, room: room) else { return nil }
        // A read never makes a room; an action does, as a WebSocket action would. A cluster node
        // knows only the rooms it holds: there a read of an unknown room reads it empty.
        if mustExist, rooms.sharedRoomsAreLocal, !SystemRoom.isSystemKind(kind.name), !rooms.registry.exists(room) {
            responder.respond(APIError.response(ProtocolError(.unknownRoom, "no room \(room) yet: an action makes it", room: room)))
            return nil
        }
        return kind
    }

    /// Whether the request carries what room administration needs (an admin token where tokens
    /// are checked); else it is answered with the refusal.
    private func administers(_ request: HTTPRequest, responder: HTTPResponder) -> Bool {
        let facts = Admission.Facts(now: rooms.runtime.clock.secondsSince1970)
        guard case .failure(let refusal) = Admission.decide(.administer(token: Self.bearerToken(request.authorization)), facts: facts,
                                                            settings: rooms.configuration) else { return true }
        responder.respond(HTTPRoutes.refusal(refusal))
        return false
    }

    private func withinRate(_ caller: String, responder: HTTPResponder, room: String?) -> Bool {
        let settings = rooms.configuration
        guard limits.take(caller, rate: settings.maxActionsPerSecond, burst: settings.actionBurst, now: rooms.runtime.clock.now) else {
            let error = ProtocolError(.rateLimited, "over \(Int(settings.maxActionsPerSecond)) requests a second from \(caller) (--max-actions-per-second)", room: room)
            responder.respond(APIError.response(error))
            return false
        }
        return true
    }

    /// The token of an `Authorization: Bearer TOKEN` header.
    static func bearerToken(_ header: String?) -> String? {
        guard let header, header.lowercased().hasPrefix("bearer ") else { return nil }
        return String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }
}

extension HTTPResponse {
    func adding(_ headers: [String: String]) -> HTTPResponse {
        var response = self
        response.headers.merge(headers) { _, new in new }
        return response
    }
}
