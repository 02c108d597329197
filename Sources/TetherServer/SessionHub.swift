import Foundation
import Logging
import TetherProtocol
import TetherJSON
import TetherState
import TetherTransport

/// The server side of every connection, on the socket thread: decodes what clients send,
/// routes it to rooms, and feeds each connection's send queue from what rooms produce.
///
/// Threading rule: everything here runs on the transport's service thread, except `post`,
/// which any thread (a room) may call to run work there. Hence `@unchecked Sendable`.
final class SessionHub: WebSocketServerDelegate, @unchecked Sendable {
    private let configuration: ServerConfiguration
    private let metrics: ServerMetrics
    private let logger: Logger
    private let store: RoomStore?
    private(set) var registry: RoomRegistry!
    /// Set once before the transport starts.
    var transport: WebSocketServer!
    private var sessions: [UInt64: Session] = [:]
    private var connectionsPerAddress: [String: Int] = [:]
    /// Sessions that got messages during the current batch of posted work.
    private var flushAfterBatch: [Session] = []
    /// Where merged patches are built; one per socket thread.
    private var scratch: [UInt8] = []

    init(configuration: ServerConfiguration, kinds: [ViewModelKind], store: RoomStore?, metrics: ServerMetrics, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.registry = RoomRegistry(kinds: kinds) { [unowned self] name, kind, predecessor in
            self.makeRoom(name: name, kind: kind, after: predecessor)
        }
        scratch.reserveCapacity(configuration.maxMergedPatchBytes + 512)
    }

    /// Runs `work` on the socket thread, in posting order.
    func post(_ work: @escaping @Sendable (SessionHub) -> Void) {
        transport.execute { [self] in work(self) }
    }

    private func makeRoom(name: String, kind: ViewModelKind, after predecessor: Room? = nil) -> Room {
        let room = Room(name: name, kind: kind, configuration: configuration, hub: self, store: store, metrics: metrics, logger: logger)
        room.enqueue { $0.start(after: predecessor) }
        return room
    }

    // MARK: Connections

    func connectionOpened(_ connection: WebSocketConnection) {
        let session = Session(
            id: RandomID.make(), connection: connection,
            outbox: Outbox(limitBytes: configuration.sendQueueBytes, maxMergedBytes: configuration.maxMergedPatchBytes),
            actions: TokenBucket(rate: configuration.maxActionsPerSecond, capacity: configuration.actionBurst))
        connection.context = session
        sessions[connection.id] = session
        metrics.connectionsOpened.increment()
        metrics.connections.increment()
        let fromAddress = connectionsPerAddress[connection.remoteAddress, default: 0] + 1
        connectionsPerAddress[connection.remoteAddress] = fromAddress
        if fromAddress > configuration.maxConnectionsPerIP {
            logger.notice("refusing a connection from \(connection.remoteAddress): \(fromAddress) open from that address")
            connection.close(code: 1008, reason: "too many connections from your address")
            return
        }
        let hello = ServerMessage.hello(protocolVersion: TetherProtocol.version, server: configuration.serverName, session: session.id)
        enqueue(.control(hello.encoded()), for: session)
    }

    func connectionClosed(_ connection: WebSocketConnection) {
        guard let session = connection.context as? Session else { return }
        connection.context = nil
        session.isClosed = true
        sessions[connection.id] = nil
        metrics.connections.decrement()
        let remaining = connectionsPerAddress[connection.remoteAddress, default: 1] - 1
        connectionsPerAddress[connection.remoteAddress] = remaining > 0 ? remaining : nil
        let handle = SessionHandle(session: session)
        for (name, room) in session.joined {
            room.enqueue { $0.leave(handle) }
            if room.kind.scope == .shared { registry.removeMember(name) }
        }
        session.joined.removeAll()
        for room in session.privateRooms.values { room.enqueue { $0.stop() } }
        registry.privateRoomCount -= session.privateRooms.count
        session.privateRooms.removeAll()
    }

    func connectionWritable(_ connection: WebSocketConnection) {
        guard let session = connection.context as? Session else { return }
        let stats = session.outbox.flush(to: connection, scratch: &scratch)
        guard stats.frames > 0 else { return }
        metrics.framesSent.increment(by: Int64(stats.frames))
        metrics.bytesSent.increment(by: Int64(stats.bytes))
        if stats.patchVersions > 0 { metrics.patchDeliveries.increment(by: Int64(stats.patchVersions)) }
        if stats.mergedFrames > 0 { metrics.mergedFrames.increment(by: Int64(stats.mergedFrames)) }
    }

    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) {
        metrics.messagesReceived.increment()
        metrics.bytesReceived.increment(by: Int64(payload.count))
        guard let session = connection.context as? Session else { return }
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(payload)
        } catch {
            reject(error, session: session)
            return
        }
        switch message {
        case .join(let room, let id, let since, let token):
            join(room, id: id, since: since, token: token, session: session)
        case .leave(let room, let id):
            leave(room, id: id, session: session)
        case .action(let room, let name, let args, let id):
            perform(name, args: args, id: id, room: room, session: session)
        case .describe(let kind, let id):
            describe(kind, id: id, session: session)
        }
    }

    func connection(_ connection: WebSocketConnection, receivedBinary payload: UnsafeRawBufferPointer) {
        metrics.messagesReceived.increment()
        guard let session = connection.context as? Session else { return }
        reject(ProtocolError(.badMessage, "binary frames are not supported: send JSON in text frames"), session: session)
    }

    func httpGET(path: String) -> HTTPResponse {
        switch path {
        case "/healthz": return HTTPResponse(status: 200, text: "ok")
        case "/metrics":
            metrics.rooms.set(Double(registry.sharedRoomCount + registry.privateRoomCount))
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render())
        default: return .notFound
        }
    }

    // MARK: Requests

    private func join(_ name: String, id: Int?, since: ResumePoint?, token: String?, session: Session) {
        guard let kind = kind(forRoom: name, id: id, session: session) else { return }
        if let auth = configuration.auth {
            guard let token else {
                reject(ProtocolError(.unauthorized, "this server needs a token to join \(name)", id: id, room: name), session: session)
                return
            }
            do {
                let claims = try auth.verify(token)
                guard claims.covers(room: name) else {
                    reject(ProtocolError(.unauthorized, "the token of \"\(claims.subject)\" does not cover room \(name)", id: id, room: name), session: session)
                    return
                }
                session.authorizedUntil[name] = claims.expires
            } catch {
                reject(ProtocolError(.unauthorized, error.description, id: id, room: name), session: session)
                return
            }
        }
        if session.joined[name] == nil, session.joined.count >= configuration.maxRoomsPerConnection {
            reject(ProtocolError(.rateLimited, "a connection may join at most \(configuration.maxRoomsPerConnection) rooms; leave one first", id: id, room: name), session: session)
            return
        }
        guard hasCapacity(forRoom: name, kind: kind, session: session) else {
            reject(ProtocolError(.rateLimited, "the server holds its maximum of \(configuration.maxRooms) rooms; try again later", id: id, room: name), session: session)
            return
        }
        session.consecutiveErrors = 0
        let room = self.room(named: name, kind: kind, for: session)
        if session.joined[name] == nil {
            if kind.scope == .shared { registry.addMember(name) }
            session.joined[name] = room
        } else {
            session.outbox.forget(room: name)  // a second join restarts the room's stream
        }
        let handle = SessionHandle(session: session)
        room.enqueue { $0.join(handle, since: since, id: id) }
    }

    /// Leaving a room not joined is not an error: the client's wish already holds.
    private func leave(_ name: String, id: Int?, session: Session) {
        session.consecutiveErrors = 0
        session.authorizedUntil[name] = nil
        if let room = session.joined.removeValue(forKey: name) {
            session.outbox.forget(room: name)
            let handle = SessionHandle(session: session)
            room.enqueue { $0.leave(handle) }
            if room.kind.scope == .shared { registry.removeMember(name) }
        }
        if let id { enqueue(.control(ServerMessage.ack(id: id, room: name, version: nil).encoded()), for: session) }
    }

    private func describe(_ kind: String?, id: Int?, session: Session) {
        let kinds: [ViewModelKind]
        if let kind {
            guard let found = registry.kind(named: kind) else {
                reject(ProtocolError(.unknownRoom, "no room kind \"\(kind)\"; kinds are \(registry.kindNames.joined(separator: ", "))", id: id), session: session)
                return
            }
            kinds = [found]
        } else {
            kinds = registry.allKinds
        }
        session.consecutiveErrors = 0
        let description = ServerMessage.description(id: id, kinds: kinds.map(\.protocolDescription))
        enqueue(.control(description.encoded()), for: session)
    }

    private func perform(_ action: String, args: JSON?, id: Int, room name: String, session: Session) {
        guard let kind = kind(forRoom: name, id: id, session: session) else { return }
        guard session.actions.take() else {
            reject(ProtocolError(.rateLimited, "more than \(Int(configuration.maxActionsPerSecond)) actions per second", id: id, room: name), session: session)
            return
        }
        if configuration.auth != nil {
            guard let until = session.authorizedUntil[name], session.joined[name] != nil else {
                reject(ProtocolError(.unauthorized, "join \(name) with a token before acting on it", id: id, room: name), session: session)
                return
            }
            guard Int(Date().timeIntervalSince1970) < until else {
                reject(ProtocolError(.unauthorized, "the token for \(name) has expired; join again with a fresh one", id: id, room: name), session: session)
                return
            }
        }
        guard kind.actionNames.contains(action) else {
            let known = kind.actionNames.isEmpty ? "it has none" : "its actions are \(kind.actionNames.joined(separator: ", "))"
            reject(ProtocolError(.unknownAction, "\(kind.name) has no action \"\(action)\"; \(known)", id: id, room: name), session: session)
            return
        }
        guard session.joined[name] != nil || hasCapacity(forRoom: name, kind: kind, session: session) else {
            reject(ProtocolError(.rateLimited, "the server holds its maximum of \(configuration.maxRooms) rooms; try again later", id: id, room: name), session: session)
            return
        }
        session.consecutiveErrors = 0
        let room = session.joined[name] ?? self.room(named: name, kind: kind, for: session)
        let handle = SessionHandle(session: session)
        room.enqueue { $0.perform(action, args: args, id: id, from: handle) }
    }

    /// The kind a room name refers to; answers `unknown_room` (with the request's id) if none.
    private func kind(forRoom name: String, id: Int?, session: Session) -> ViewModelKind? {
        switch registry.kind(forRoom: name) {
        case .success(let kind):
            return kind
        case .failure(var error):
            error.id = id
            reject(error, session: session)
            return nil
        }
    }

    /// Whether `name` exists already for this session, or one more room fits under the limit.
    private func hasCapacity(forRoom name: String, kind: ViewModelKind, session: Session) -> Bool {
        switch kind.scope {
        case .shared: if registry.hasSharedRoom(named: name) { return true }
        case .perSession: if session.privateRooms[name] != nil { return true }
        }
        return registry.sharedRoomCount + registry.privateRoomCount < configuration.maxRooms
    }

    private func room(named name: String, kind: ViewModelKind, for session: Session) -> Room {
        switch kind.scope {
        case .shared:
            return registry.sharedRoom(named: name, kind: kind)
        case .perSession:
            if let room = session.privateRooms[name] { return room }
            let room = makeRoom(name: name, kind: kind)
            session.privateRooms[name] = room
            registry.privateRoomCount += 1
            return room
        }
    }

    /// Answers an invalid request; a client that sends nothing valid for long enough is closed.
    /// Requests refused by a limit (`rate_limited`) don't count: the limit already bounds them.
    private func reject(_ error: ProtocolError, session: Session) {
        metrics.errorSent(error.code)
        enqueue(.control(ServerMessage.error(error).encoded()), for: session)
        guard error.code != .rateLimited else { return }
        session.consecutiveErrors += 1
        if session.consecutiveErrors >= configuration.maxConsecutiveErrors {
            logger.info("closing session \(session.id): \(session.consecutiveErrors) invalid messages in a row")
            session.connection.close(code: 1008, reason: "too many invalid messages")
        }
    }

    // MARK: From rooms (socket thread)

    func broadcast(_ patch: PatchFrame, to subscribers: [SessionHandle]) {
        for handle in subscribers { send(.patch(patch), to: handle) }
        metrics.fanOutLatency.record(.now - patch.createdAt)
    }

    /// Queues a room's message for a session, unless it closed or left that room meanwhile.
    func send(_ message: OutboundMessage, to handle: SessionHandle) {
        let session = handle.session
        guard !session.isClosed else { return }
        if let room = message.room, session.joined[room] == nil { return }
        enqueue(message, for: session, soon: true)
    }

    /// Queues a message. Messages from rooms' posts (`soon`) go out when the current batch of
    /// posts has run (`didRunPostedWork`), written at once on a connection with nothing buffered:
    /// at low load that is one frame per patch without waiting for lws's writable callback, and
    /// when the socket thread is behind, a batch holds many patches per connection and they
    /// leave merged. (Asking lws for a writable callback costs two epoll_ctl calls per frame:
    /// measured 7.9 µs of server CPU per delivered patch that way, 6.7 µs writing at once, at
    /// 1,000 subscribers × 100 patches/s.) Messages answering a connection's own callbacks
    /// (hello, errors) wait for its writable callback, as lws expects.
    private func enqueue(_ message: OutboundMessage, for session: Session, soon: Bool = false) {
        let wasEmpty = session.outbox.isEmpty
        switch session.outbox.enqueue(message) {
        case .queued:
            guard wasEmpty else { break }
            if soon {
                if !session.isFlushScheduled {
                    session.isFlushScheduled = true
                    flushAfterBatch.append(session)
                }
            } else {
                session.connection.requestWritable()
            }
        case .dropped:
            break
        case .overflowed(let name):
            metrics.sendQueueOverflows.increment()
            let handle = SessionHandle(session: session)
            session.joined[name]?.enqueue { $0.resync(handle) }
        }
    }

    func didRunPostedWork() {
        let sessions = flushAfterBatch
        flushAfterBatch.removeAll(keepingCapacity: true)
        for session in sessions {
            session.isFlushScheduled = false
            guard !session.isClosed, !session.outbox.isEmpty else { continue }
            if session.connection.isChoked {
                session.connection.requestWritable()
            } else {
                connectionWritable(session.connection)
            }
        }
    }

    // MARK: Housekeeping (socket thread, once a second)

    func sweep() {
        for room in registry.removeIdleRooms(olderThan: configuration.idleRoomTimeout) {
            room.enqueue { $0.stop() }
        }
        let now = ContinuousClock.now
        for session in sessions.values {
            guard !session.outbox.isEmpty, let since = session.outbox.waitingSince,
                  now - since > configuration.stuckClientTimeout, session.connection.isOpen else { continue }
            logger.info("closing session \(session.id): its queue made no progress for \(configuration.stuckClientTimeout)")
            metrics.stuckClientsClosed.increment()
            session.connection.close(code: 1008, reason: "not reading")
        }
        metrics.rooms.set(Double(registry.sharedRoomCount + registry.privateRoomCount))
    }

    func willShutdown() {
        for session in sessions.values where !session.outbox.isEmpty {
            session.connection.requestWritable()
        }
    }

    /// Every live room, shared and per-session. Only after the socket thread has stopped.
    func allRoomsAfterShutdown() -> [Room] {
        registry.allRooms() + sessions.values.flatMap { $0.privateRooms.values }
    }
}
