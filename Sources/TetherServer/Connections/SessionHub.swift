import Logging
import Synchronization
import TetherJSON
import TetherProtocol
import TetherState
import TetherTransport

/// The server side of every connection of one socket shard: decodes what clients send,
/// admits it (`Admission`), routes it to the server's rooms (`RoomService`), and feeds each
/// connection's send queue from what rooms deliver. It knows connections only as
/// `ClientConnection`s, so it runs on libwebsockets in production and on in-memory connections
/// in tests (TetherTesting).
///
/// Threading rule: everything here runs on `queue` (the shard's service thread in production),
/// except `deliver`'s callers, which hand their work to `queue`. Hence `@unchecked Sendable`.
/// The shards' hubs share the rooms (`rooms`); each owns its sessions and their send queues.
public final class SessionHub: @unchecked Sendable {
    /// Changed only by `reconfigure` (a reload), on the queue like everything else.
    private(set) var configuration: ServerConfiguration
    /// The queue every method runs on.
    public let queue: any WorkQueue
    /// The server's rooms, shared by every shard's hub.
    let rooms: RoomService
    private var runtime: ServerRuntime { rooms.runtime }
    private var metrics: ServerMetrics { rooms.metrics }
    var logger: Logger { rooms.logger }
    var sessions: [ObjectIdentifier: Session] = [:]
    /// This hub's socket shard (its place in `shards`).
    let shard: Int
    /// Every shard's hub, and what they share beyond the rooms.
    var shards: HubShards { rooms.hubs }
    /// Sessions that got messages during the current batch of queued work.
    private var flushAfterBatch: [Session] = []
    /// Where merged patches are built, and where a flush packs frames for one write; one each
    /// per hub.
    private var scratch: [UInt8] = []
    private var packedFrames = PackedFrames(capacity: SendQueue.packedWriteBytes + (64 << 10))
    private var housekeeping: (any ServerTimer)?
    private let openConnectionCount = Atomic(0)

    /// The hub of the next socket shard of `rooms`' server, served on `queue`.
    public init(rooms: RoomService, queue: any WorkQueue) {
        self.rooms = rooms
        self.queue = queue
        configuration = rooms.configuration
        shard = rooms.hubs.count
        scratch.reserveCapacity(configuration.maxMergedPatchBytes + 512)
        rooms.hubs.add(self)
    }

    private var now: ContinuousClock.Instant { runtime.clock.now }

    // MARK: Connections

    public func connectionOpened(_ connection: any ClientConnection) {
        let session = Session(
            id: RandomID.make(), shard: shard, connection: connection,
            sendQueue: SendQueue(limitBytes: configuration.sendQueueBytes, maxMergedBytes: configuration.maxMergedPatchBytes),
            actions: TokenBucket(rate: configuration.maxActionsPerSecond, capacity: configuration.actionBurst, now: now))
        connection.context = session
        sessions[ObjectIdentifier(connection)] = session
        openConnectionCount.add(1, ordering: .relaxed)
        metrics.connectionsOpened.increment()
        metrics.connections.increment()
        shards.activity.withLock { $0.opened += 1 }
        let fromAddress = shards.connectionOpened(from: connection.remoteAddress)
        logger.debug("connection \(session.id) opened from \(connection.remoteAddress)")
        if let limit = configuration.maxConnectionsPerIP, fromAddress > limit {
            logger.notice("refusing a connection from \(connection.remoteAddress): \(fromAddress) open from that address (--max-connections-per-ip)")
            connection.close(code: 1008, reason: "too many connections from your address")
            return
        }
        let hello = ServerMessage.hello(protocolVersion: TetherProtocol.version, server: configuration.serverName, session: session.id)
        enqueue(.control(hello.encoded()), for: session)
    }

    /// Called once per opened connection, however it ended; `closeCode` is for the log.
    public func connectionClosed(_ connection: any ClientConnection, closeCode: UInt16? = nil) {
        guard let session = connection.context as? Session else { return }
        connection.context = nil
        session.isClosed = true
        sessions[ObjectIdentifier(connection)] = nil
        openConnectionCount.subtract(1, ordering: .relaxed)
        metrics.connections.decrement()
        shards.activity.withLock { $0.closed += 1 }
        logger.debug("connection \(session.id) from \(connection.remoteAddress) closed (\(closeCode.map { "code \($0)" } ?? "no close code"))")
        shards.connectionClosed(from: connection.remoteAddress)
        let handle = SessionHandle(session: session)
        for (name, room) in session.joined {
            room.leave(handle)
            rooms.memberLeft(name, of: room)
        }
        session.joined.removeAll()
        rooms.releasePrivateRooms(Array(session.privateRooms.values))
        session.privateRooms.removeAll()
    }

    public func connectionWritable(_ connection: any ClientConnection) {
        guard let session = connection.context as? Session else { return }
        flush(session)
    }

    private func flush(_ session: Session) {
        let stats = session.sendQueue.flush(to: session.connection, frames: &packedFrames, scratch: &scratch, now: now)
        guard stats.frames > 0 else { return }
        metrics.framesSent.increment(by: Int64(stats.frames))
        metrics.bytesSent.increment(by: Int64(stats.bytes))
        if stats.patchVersions > 0 { metrics.patchDeliveries.increment(by: Int64(stats.patchVersions)) }
        if stats.mergedFrames > 0 { metrics.mergedFrames.increment(by: Int64(stats.mergedFrames)) }
    }

    public func connection(_ connection: any ClientConnection, receivedText payload: UnsafeRawBufferPointer) {
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
        if case .hello(let client, let user) = message {
            return hello(client: client, user: user, session: session)
        }
        session.hasRequested = true
        switch message {
        case .hello:
            break
        case .join(let room, let id, let since, let token, let presence, let watchPresence):
            join(room, id: id, since: since, token: token, presence: presence, watchPresence: watchPresence, session: session)
        case .leave(let room, let id):
            leave(room, id: id, session: session)
        case .action(let room, let name, let args, let id, let seq):
            perform(name, args: args, id: id, seq: seq, room: room, session: session)
        case .describe(let kind, let id):
            describe(kind, id: id, session: session)
        case .presence(let room, let data, let id):
            updatePresence(room, data: data, id: id, session: session)
        }
    }

    public func connectionReceivedBinary(_ connection: any ClientConnection) {
        metrics.messagesReceived.increment()
        guard let session = connection.context as? Session else { return }
        reject(ProtocolError(.badMessage, "binary frames are not supported: send JSON in text frames"), session: session)
    }

    // MARK: Requests

    private func join(_ name: String, id: Int?, since: ResumePoint?, token: String?, presence: JSON?, watchPresence: Bool, session: Session) {
        guard let kind = kind(forRoom: name, id: id, session: session) else { return }
        if let presence, let error = presenceDataError(presence, id: id, room: name) {
            reject(error, session: session)
            return
        }
        var facts = facts(of: session, in: name)
        facts.roomsJoined = session.joined.count
        facts.room = rooms.counts(forRoom: name, kind: kind, privateInstance: session.privateRooms[name])
        switch Admission.decide(.join(room: name, kind: kind, token: token), facts: facts, settings: configuration) {
        case .failure(let refusal):
            return refuse(refusal, id: id, room: name, session: session)
        case .success(.token(let claims)):
            session.authorizedUntil[name] = claims.expires
            session.viewers[name] = Viewer(id: claims.subject, claims: claims.payload)
        case .success(.open):
            break
        }
        session.consecutiveErrors = 0
        let previous = session.joined[name]
        let room = self.room(named: name, kind: kind, for: session, joining: previous == nil)
        if let previous, previous !== room {
            // Deleted (by the administration) and made anew since this session joined it.
            session.joined[name] = nil
            session.sendQueue.forget(room: name)
            previous.leave(SessionHandle(session: session))
            if kind.scope == .shared { rooms.memberJoined(name, of: kind) }
        }
        if session.joined[name] == nil {
            if kind.scope == .perSession { rooms.memberJoined(name, of: kind) }
            session.joined[name] = room
        } else {
            session.sendQueue.forget(room: name)  // a second join restarts the room's stream
        }
        let viewer = viewer(of: session, in: name)
        let handle = SessionHandle(session: session, viewer: viewer)
        // Rooms without presence ignore it: no stream, nothing listed. A member's user is its
        // viewer: the token's subject groups a person's connections, else each connection is one.
        // `presence` lists the connection whatever `watchPresence` says.
        var listing: PresenceJoin?
        if kind.hasPresence {
            listing = presence.map { .member(PresenceMember(id: session.id, user: viewer.id, data: $0)) } ?? (watchPresence ? .spectator : nil)
        }
        room.join(handle, since: since, id: id, presence: listing)
    }

    /// Replaces the connection's presence data in a room it joined with presence. Counted
    /// against the same token bucket as actions.
    private func updatePresence(_ name: String, data: JSON, id: Int?, session: Session) {
        var facts = facts(of: session, in: name)
        facts.withinRate = session.actions.take(now: now)
        if case .failure(let refusal) = Admission.decide(.updatePresence(room: name), facts: facts, settings: configuration) {
            return refuse(refusal, id: id, room: name, session: session)
        }
        if let error = presenceDataError(data, id: id, room: name) {
            reject(error, session: session)
            return
        }
        guard let room = session.joined[name] else {
            reject(ProtocolError(.invalidArgs, "join \(name) with presence before updating it", id: id, room: name), session: session)
            return
        }
        session.consecutiveErrors = 0
        room.updatePresence(SessionHandle(session: session, viewer: viewer(of: session, in: name)), data: data, id: id)
    }

    /// Presence data is an object (the codec checks) of at most `TetherProtocol.maxPresenceBytes` encoded.
    private func presenceDataError(_ data: JSON, id: Int?, room: String) -> ProtocolError? {
        let size = data.encoded().count
        guard size > TetherProtocol.maxPresenceBytes else { return nil }
        return ProtocolError(.tooLarge, "presence data is \(size) bytes encoded; the limit is \(TetherProtocol.maxPresenceBytes)", id: id, room: room)
    }

    /// Leaving a room not joined is not an error: the client's wish already holds.
    private func leave(_ name: String, id: Int?, session: Session) {
        session.consecutiveErrors = 0
        session.authorizedUntil[name] = nil
        session.viewers[name] = nil
        if let room = session.joined.removeValue(forKey: name) {
            session.sendQueue.forget(room: name)
            let handle = SessionHandle(session: session)
            room.leave(handle)
            rooms.memberLeft(name, of: room)
        }
        if let id { enqueue(.control(ServerMessage.ack(id: id, room: name, version: nil).encoded()), for: session) }
    }

    private func perform(_ action: String, args: JSON?, id: Int, seq: Int?, room name: String, session: Session) {
        guard let kind = kind(forRoom: name, id: id, session: session) else { return }
        if seq != nil, session.identity == nil {
            reject(ProtocolError(.badMessage, "a numbered action (seq) needs a hello with your client id first", id: id, room: name), session: session)
            return
        }
        var facts = facts(of: session, in: name)
        facts.withinRate = session.actions.take(now: now)
        if !facts.joined { facts.room = rooms.counts(forRoom: name, kind: kind, privateInstance: session.privateRooms[name]) }
        if case .failure(let refusal) = Admission.decide(.act(room: name, kind: kind), facts: facts, settings: configuration) {
            return refuse(refusal, id: id, room: name, session: session)
        }
        guard kind.actionNames.contains(action) else {
            let known = kind.actionNames.isEmpty ? "it has none" : "its actions are \(kind.actionNames.joined(separator: ", "))"
            reject(ProtocolError(.unknownAction, "\(kind.name) has no action \"\(action)\"; \(known)", id: id, room: name), session: session)
            return
        }
        session.consecutiveErrors = 0
        let room = session.joined[name] ?? self.room(named: name, kind: kind, for: session)
        let handle = SessionHandle(session: session, viewer: viewer(of: session, in: name))
        // With tokens the token's subject is part of the key: a guessed client id answers nothing.
        let number = seq.map { seq in
            ActionNumber(client: configuration.auth == nil ? session.identity!.client : "\(handle.viewer.id) \(session.identity!.client)", seq: seq)
        }
        room.perform(action, args: args, id: id, number: number, from: handle)
    }

    /// Who `session` is in room `name`: its token's subject there, or without tokens who its
    /// hello says (`user`, else `client`), or the connection's anonymous id (the `session` of the
    /// server's hello).
    private func viewer(of session: Session, in name: String) -> Viewer {
        session.viewers[name] ?? Viewer(id: session.identity?.viewer ?? session.id)
    }

    /// The client's `hello`: first, once (the same one again changes nothing).
    private func hello(client: String, user: String?, session: Session) {
        let identity = (client: client, viewer: user ?? client)
        if let known = session.identity, known == identity { return }
        guard session.identity == nil, !session.hasRequested else {
            let reason = session.identity == nil ? "a hello must come before joins and actions" : "this connection said hello already, as someone else"
            reject(ProtocolError(.badMessage, reason), session: session)
            return
        }
        session.identity = identity
    }

    private func describe(_ kind: String?, id: Int?, session: Session) {
        let kinds: [ViewModelKind]
        if let kind {
            guard let found = rooms.registry.kind(named: kind) else {
                reject(ProtocolError(.unknownRoom, "no room kind \"\(kind)\"; kinds are \(rooms.registry.kindNames.joined(separator: ", "))", id: id), session: session)
                return
            }
            kinds = [found]
        } else {
            kinds = rooms.registry.allKinds
        }
        session.consecutiveErrors = 0
        let description = ServerMessage.description(id: id, kinds: kinds.map(\.protocolDescription))
        enqueue(.control(description.encoded()), for: session)
    }

    /// The kind a room name refers to; answers `unknown_room` (with the request's id) if none.
    private func kind(forRoom name: String, id: Int?, session: Session) -> ViewModelKind? {
        switch rooms.kind(forRoom: name) {
        case .success(let kind):
            return kind
        case .failure(var error):
            error.id = id
            reject(error, session: session)
            return nil
        }
    }

    /// What `Admission` needs to know of this session in room `name`.
    private func facts(of session: Session, in name: String) -> Admission.Facts {
        Admission.Facts(now: runtime.clock.secondsSince1970, joined: session.joined[name] != nil,
                        authorizedUntil: session.authorizedUntil[name])
    }

    /// `joining`: a shared room counts the session as a member in the same step.
    private func room(named name: String, kind: ViewModelKind, for session: Session, joining: Bool = false) -> any RoomEndpoint {
        switch kind.scope {
        case .shared:
            return rooms.sharedRoom(named: name, kind: kind, joining: joining)
        case .perSession:
            // Per-session rooms stay on the connection's node, in this process.
            if let room = session.privateRooms[name] { return room }
            let room = rooms.makePrivateRoom(named: name, kind: kind)
            session.privateRooms[name] = room
            return room
        }
    }

    // MARK: Refusals

    /// Answers an invalid request; a client that sends nothing valid for long enough is closed.
    private func reject(_ error: ProtocolError, session: Session) {
        answer(error, session: session)
        session.consecutiveErrors += 1
        if session.consecutiveErrors >= configuration.maxConsecutiveErrors {
            logger.notice("closing connection \(session.id) from \(session.connection.remoteAddress): \(session.consecutiveErrors) invalid messages in a row")
            session.connection.close(code: 1008, reason: "too many invalid messages")
        }
    }

    /// A request `Admission` refused: by a limit, or for its token.
    private func refuse(_ refusal: Admission.Refusal, id: Int?, room: String, session: Session) {
        let error = ProtocolError(refusal.code, refusal.message, id: id, room: room)
        if refusal.reason == .limited {
            limitHit(error, session: session)
        } else {
            refuse(error, session: session)
        }
    }

    /// A refused join or action (auth): worth a notice for the operator, and counted as invalid.
    private func refuse(_ error: ProtocolError, session: Session) {
        logger.notice("refused \(error.room.map { "room \($0) " } ?? "")for connection \(session.id) from \(session.connection.remoteAddress): \(error.message)")
        reject(error, session: session)
    }

    /// A request refused by a limit (`rate_limited`). The limit already bounds such requests,
    /// so they don't count as invalid; the log shows the first per connection and a summary.
    private func limitHit(_ error: ProtocolError, session: Session) {
        answer(error, session: session)
        shards.activity.withLock { $0.limitsHit += 1 }
        if !session.hitLimit {
            session.hitLimit = true
            logger.notice("connection \(session.id) from \(session.connection.remoteAddress) hit a limit: \(error.message)")
        }
    }

    private func answer(_ error: ProtocolError, session: Session) {
        metrics.errorSent(error.code)
        enqueue(.control(ServerMessage.error(error).encoded()), for: session)
    }

    // MARK: From rooms

    /// What rooms delivered, in their order (on the hub's queue).
    func deliver(_ deliveries: [RoomDelivery]) {
        for delivery in deliveries {
            switch delivery {
            case .patch(let patch, let subscribers):
                for handle in subscribers { send(.patch(patch), to: handle) }
                metrics.fanOutLatency.record(.now - patch.createdAt)
            case .message(let message, let handle):
                send(message, to: handle)
            case .presence(let frame, let room, let listeners):
                for handle in listeners where !handle.session.isClosed && handle.session.joined[room] != nil {
                    enqueue(.control(frame), for: handle.session, fromRoom: true)
                }
            case .reply(let outcome, .session(let handle, let id, let room)):
                guard !handle.session.isClosed else { continue }
                if configuration.withholdsAcksForTests, case .applied = outcome { continue }
                enqueue(.control(outcome.frame(id: id, room: room)), for: handle.session, fromRoom: true)
            case .reply(_, .remote):
                assertionFailure("HubOutput answers another node's forwarded action itself")
            }
        }
    }

    /// Queues a room's message for a session, unless it closed or left that room meanwhile.
    private func send(_ message: OutboundMessage, to handle: SessionHandle) {
        let session = handle.session
        guard !session.isClosed else { return }
        if let room = message.room, session.joined[room] == nil { return }
        enqueue(message, for: session, fromRoom: true)
    }

    /// Queues a message. Messages from rooms go out when the current batch of queued work has
    /// run (`didRunQueuedWork`), written at once on a connection with nothing buffered: at low
    /// load that is one frame per patch without waiting for a writable callback, and when the
    /// hub is behind, a batch holds many patches per connection and they leave merged. (Asking
    /// lws for a writable callback costs two epoll_ctl calls per frame; docs/PERFORMANCE.md
    /// has the figures.) Answers to a connection's own requests (hello, errors) wait for its
    /// writable callback, as lws expects.
    func enqueue(_ message: OutboundMessage, for session: Session, fromRoom: Bool = false) {
        let wasEmpty = session.sendQueue.isEmpty
        switch session.sendQueue.enqueue(message, now: now) {
        case .queued:
            guard wasEmpty else { break }
            if fromRoom {
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
            shards.activity.withLock { $0.resnapshots += 1 }
            logger.debug("connection \(session.id): send queue full, room \(name) will resend a snapshot")
            let handle = SessionHandle(session: session)
            session.joined[name]?.resync(handle)
        }
    }

    /// A batch of queued work has run: flush what rooms delivered during it.
    public func didRunQueuedWork() {
        let sessions = flushAfterBatch
        flushAfterBatch.removeAll(keepingCapacity: true)
        for session in sessions {
            session.isFlushScheduled = false
            guard !session.isClosed, !session.sendQueue.isEmpty else { continue }
            if session.connection.isChoked {
                session.connection.requestWritable()
            } else {
                flush(session)
            }
        }
    }

    // MARK: Housekeeping

    /// Runs `sweep` once a second on the hub's queue until `stopHousekeeping`.
    public func startHousekeeping() {
        let queue = self.queue
        housekeeping = runtime.clock.startTimer(every: .seconds(1)) { [self] in
            queue.execute { self.sweep() }
        }
    }

    public func stopHousekeeping() {
        housekeeping?.cancel()
        housekeeping = nil
    }

    /// Closes this shard's stuck clients. (The rooms' housekeeping is `RoomService.sweep`.)
    public func sweep() {
        closeStuckClients(now: now)
    }

    private func closeStuckClients(now: ContinuousClock.Instant) {
        for session in sessions.values {
            guard !session.sendQueue.isEmpty, let since = session.sendQueue.waitingSince,
                  now - since > configuration.stuckClientTimeout, session.connection.isOpen else { continue }
            logger.notice("closing connection \(session.id) from \(session.connection.remoteAddress): its queue made no progress for \(configuration.stuckClientTimeout)")
            metrics.stuckClientsClosed.increment()
            session.connection.close(code: 1008, reason: "not reading")
        }
    }

    /// Shutdown started: ask every connection with queued messages for a writable call.
    public func willShutdown() {
        for session in sessions.values where !session.sendQueue.isEmpty {
            session.connection.requestWritable()
        }
    }

    /// A deleted room's subscribers of this shard: their stream of it ends with `frame`.
    func endStream(of room: any RoomEndpoint, frame: [UInt8]) {
        let name = room.name
        for session in sessions.values where session.joined[name] === room {
            session.joined[name] = nil
            session.authorizedUntil[name] = nil
            session.viewers[name] = nil
            session.sendQueue.forget(room: name)
            enqueue(.control(frame), for: session)
        }
    }

    // MARK: Reload

    /// Takes reloaded settings (`TetherServer.reload` passes the running ones with the
    /// reloadable fields replaced, to the room service too). Limits and secrets are read per
    /// request, so they apply from the next one; every connection's action bucket is rebuilt
    /// (full) at the new rate.
    public func reconfigure(_ configuration: ServerConfiguration) {
        self.configuration = configuration
        let now = self.now
        for session in sessions.values {
            session.actions = TokenBucket(rate: configuration.maxActionsPerSecond, capacity: configuration.actionBurst, now: now)
        }
    }

    // MARK: Status

    /// Open connections of this shard (on the hub's queue).
    public var connectionCount: Int { sessions.count }
    /// Open connections of this shard, readable from any thread.
    var shardConnections: Int { openConnectionCount.load(ordering: .relaxed) }
    /// Open connections of every shard, readable from any thread.
    public var openConnections: Int { shards.openConnections }
}

/// What happened since the last summary line; one line a minute at most, only when something did.
struct ActivityCounts {
    static let interval: Duration = .seconds(60)
    var opened = 0
    var closed = 0
    var resnapshots = 0
    var limitsHit = 0
    private var since: ContinuousClock.Instant?

    mutating func isDue(now: ContinuousClock.Instant) -> Bool {
        guard let since else {
            self.since = now
            return false
        }
        return now - since >= Self.interval && (opened + closed + resnapshots + limitsHit) > 0
    }

    mutating func reset(now: ContinuousClock.Instant) {
        self = ActivityCounts()
        since = now
    }
}
