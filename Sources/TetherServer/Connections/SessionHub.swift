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
    var runtime: ServerRuntime { rooms.runtime }
    var metrics: ServerMetrics { rooms.metrics }
    var logger: Logger { rooms.logger }
    var sessions: [ObjectIdentifier: Session] = [:]
    /// This hub's socket shard (its place in `shards`).
    let shard: Int
    /// Every shard's hub, and what they share beyond the rooms.
    var shards: HubShards { rooms.hubs }
    /// Sessions that got messages during the current batch of queued work.
    var flushAfterBatch: [Session] = []
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

    var now: ContinuousClock.Instant { runtime.clock.now }

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

    func flush(_ session: Session) {
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
