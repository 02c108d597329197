import Logging
import Synchronization
import TetherProtocol
import TetherState

/// The server's rooms, owned by the server (`TetherServer`, TetherTesting's `TestServer`) and used
/// by every socket shard's hub: the kinds, the live and stored rooms (`registry`), how rooms are
/// made (local ones, or a cluster's), where they are kept (`store`), their administration
/// (`RoomAdministration.swift`: list, delete, expiry) and their housekeeping (idle rooms,
/// expiry, the status board), which runs on the service's own `queue`.
///
/// Threading: callable from any thread. The registry and the settings are locked; rooms run on
/// their own executors and deliver to the hubs through `hubs`.
public final class RoomService: Sendable {
    let runtime: ServerRuntime
    /// Where housekeeping and administration run (never a socket shard's thread).
    package let queue: any WorkQueue
    let registry: RoomRegistry
    /// Where shared rooms are kept on a single node (deletions go there too); nil in memory only
    /// and on a cluster.
    let store: RoomStore?
    /// Makes shared rooms: local ones, or a cluster's.
    private let sharedRooms: any RoomFactory
    /// Makes per-session rooms and the server's own rooms, which always stay in this process.
    private let localRooms: LocalRoomFactory
    let metrics: ServerMetrics
    let logger: Logger
    /// What the system room `tether.server` shows; recorded by housekeeping.
    let statusBoard: ServerStatusBoard
    /// Every socket shard's hub: where rooms deliver, and who hears of a deletion.
    let hubs = HubShards()
    /// Where rooms' events go out as webhooks (nil in process tests).
    let webhooks: WebhookRecorder?
    private let settings: Mutex<ServerConfiguration>
    private let housekeeping = Mutex<(any ServerTimer)?>(nil)
    private let lastExpiryCheck = Mutex<ContinuousClock.Instant?>(nil)

    /// `storedRooms`: what `store` holds at start (nil without a store). `makeSharedRooms`: a
    /// cluster's factory; without it shared rooms are this process's `Room`s.
    init(configuration: ServerConfiguration, kinds: [ViewModelKind], runtime: ServerRuntime, queue: any WorkQueue,
         store: RoomStore?, storedRooms: [StoredRoomSummary]?, metrics: ServerMetrics, logger: Logger,
         webhooks: WebhookRecorder? = nil, makeSharedRooms: ((RoomEnvironment) -> any RoomFactory)? = nil) {
        precondition(!kinds.contains { SystemRoom.isSystemKind($0.name) }, "kind names starting with \(SystemRoom.prefix) are the server's own")
        self.runtime = runtime
        self.queue = queue
        self.store = store
        self.metrics = metrics
        self.logger = logger
        settings = Mutex(configuration)
        statusBoard = ServerStatusBoard(configuration: configuration, clock: runtime.clock, metrics: metrics)
        registry = RoomRegistry(kinds: kinds + SystemRoom.kinds(board: statusBoard), stored: storedRooms)
        var environment = RoomEnvironment(configuration: configuration, runtime: runtime, store: store, metrics: metrics, logger: logger)
        environment.webhooks = webhooks
        self.webhooks = webhooks
        localRooms = LocalRoomFactory(environment: environment)
        sharedRooms = makeSharedRooms?(environment) ?? localRooms
    }

    /// Rooms in memory only (TetherTesting's `TestServer`).
    package convenience init(configuration: ServerConfiguration, kinds: [ViewModelKind], runtime: ServerRuntime, queue: any WorkQueue,
                             logger: Logger) {
        self.init(configuration: configuration, kinds: kinds, runtime: runtime, queue: queue, store: nil, storedRooms: nil,
                  metrics: ServerMetrics(), logger: logger)
    }

    /// Shared rooms kept in `store` (TetherTesting's `TestServer` with a data directory).
    package convenience init(configuration: ServerConfiguration, kinds: [ViewModelKind], runtime: ServerRuntime, queue: any WorkQueue,
                             store: RoomStore, logger: Logger) throws(StorageError) {
        self.init(configuration: configuration, kinds: kinds, runtime: runtime, queue: queue, store: store,
                  storedRooms: try store.summaries(), metrics: ServerMetrics(), logger: logger)
    }

    /// The running settings (a reload replaces them: `reconfigure`).
    var configuration: ServerConfiguration { settings.withLock { $0 } }

    /// Takes reloaded settings: limits and expiries apply from the next request or sweep.
    package func reconfigure(_ configuration: ServerConfiguration) {
        settings.withLock { $0 = configuration }
    }

    /// Whether shared rooms are this process's own `Room`s (not a cluster's).
    var sharedRoomsAreLocal: Bool { sharedRooms is LocalRoomFactory }

    public var roomCount: Int { registry.roomCount }
    /// Open connections of every shard.
    public var openConnections: Int { hubs.openConnections }

    // MARK: Rooms for the hubs

    /// The kind a room name refers to, or `unknown_room`.
    func kind(forRoom name: String) -> Result<ViewModelKind, ProtocolError> { registry.kind(forRoom: name) }

    /// The shared room `name`, made on first use. `joining`: the caller joins it, counted as a
    /// member in the same step (so no sweep drops it as idle in between).
    func sharedRoom(named name: String, kind: ViewModelKind, joining: Bool) -> any RoomEndpoint {
        // The server's own rooms describe this process: they stay local on a cluster node too.
        let factory: any RoomFactory = SystemRoom.isSystemKind(kind.name) ? localRooms : sharedRooms
        let output = HubOutput(shards: hubs)
        return registry.sharedRoom(named: name, now: runtime.clock.now, wallClock: runtime.clock.secondsSince1970, addingMember: joining) { predecessor in
            factory.makeRoom(named: name, kind: kind, after: predecessor, output: output)
        }
    }

    /// A new instance of a per-session kind for one connection (which owns it; it always stays
    /// in this process), counted until `releasePrivateRooms`.
    func makePrivateRoom(named name: String, kind: ViewModelKind) -> any RoomEndpoint {
        let output = HubOutput(shards: hubs)
        return registry.privateRoom(kind: kind.name) { localRooms.makeRoom(named: name, kind: kind, after: nil, output: output) }
    }

    /// A closed connection's per-session rooms: stopped and no longer counted.
    func releasePrivateRooms(_ rooms: [any RoomEndpoint]) {
        for room in rooms { room.stop() }
        registry.releasePrivateRooms(kinds: rooms.map(\.kind.name))
    }

    /// One subscriber more in the counts (a join of a room made earlier).
    func memberJoined(_ name: String, of kind: ViewModelKind) {
        switch kind.scope {
        case .shared: registry.addMember(name)
        case .perSession: registry.countPrivateSubscriber(kind: kind.name, 1)
        }
    }

    /// One subscriber less in the counts.
    func memberLeft(_ name: String, of room: any RoomEndpoint) {
        switch room.kind.scope {
        case .shared: registry.removeMember(name, of: room, now: runtime.clock.now)
        case .perSession: registry.countPrivateSubscriber(kind: room.kind.name, -1)
        }
    }

    /// How the room stands against the limits, for `Admission`. `privateInstance`: the
    /// connection's own instance of a per-session kind, if it has one.
    func counts(forRoom name: String, kind: ViewModelKind, privateInstance: (any RoomEndpoint)?) -> Admission.RoomCounts {
        let isLive = kind.scope == .shared ? registry.hasSharedRoom(named: name) : privateInstance != nil
        if isLive { return Admission.RoomCounts(isLive: true) }
        return Admission.RoomCounts(isLive: false, exists: registry.exists(name), rooms: registry.roomCount,
                                    roomsOfKind: registry.roomCount(ofKind: kind.name))
    }

    // MARK: Housekeeping

    /// Runs `sweep` once a second on `queue` until `stopHousekeeping`.
    package func startHousekeeping() {
        let queue = self.queue
        let timer = runtime.clock.startTimer(every: .seconds(1)) { [self] in
            queue.execute { self.sweep() }
        }
        housekeeping.withLock { $0 = timer }
    }

    package func stopHousekeeping() {
        housekeeping.withLock {
            $0?.cancel()
            $0 = nil
        }
    }

    /// Drops idle rooms, deletes expired ones (once a minute), records the server's status and
    /// logs a summary now and then.
    func sweep() {
        let configuration = self.configuration
        let now = runtime.clock.now
        for room in registry.removeIdleRooms(olderThan: configuration.idleRoomTimeout, now: now) {
            logger.debug("room \(room.name) dropped after \(configuration.idleRoomTimeout) without subscribers")
            room.stop()
        }
        let expiryDue = lastExpiryCheck.withLock { last in
            guard last.map({ now - $0 >= Self.expiryCheckInterval }) ?? true else { return false }
            last = now
            return true
        }
        if expiryDue { deleteExpiredRooms() }
        metrics.rooms.set(Double(registry.roomCount))
        let connections = hubs.openConnections
        statusBoard.record(connections: connections, rooms: registry.roomCount, auth: configuration.requiresTokens,
                           roomList: registry.hasSharedRoom(named: SystemRoom.serverStatus) ? roomList() : nil)
        let summary: String? = hubs.activity.withLock { activity in
            guard activity.isDue(now: now) else { return nil }
            defer { activity.reset(now: now) }
            return "\(connections) connections (\(activity.opened) opened, \(activity.closed) closed), \(registry.roomCount) rooms, \(activity.resnapshots) slow-client snapshots, \(activity.limitsHit) requests over a limit in the last \(ActivityCounts.interval)"
        }
        if let summary { logger.info("\(summary)") }
    }

    // MARK: Stopping

    /// Stops every shared room (each stores its state) and forgets them: a test server closing.
    package func stopSharedRooms() {
        for (room, _) in registry.sharedRooms { room.stop() }
        registry.removeAllSharedRooms()
    }

    /// Stops every room, shared and per-session, of every shard. Only once nothing else runs on
    /// any shard's queue.
    func stopAllRooms() async {
        let hubs = self.hubs.hubs
        let rooms = registry.sharedRooms.map(\.room) + hubs.flatMap { $0.sessions.values.flatMap { $0.privateRooms.values } }
        for room in rooms { await room.stopAndWait() }
        // Rooms hold the hubs as their output: forgetting them ends that cycle, as the sessions'
        // connections end theirs through the transport's delegate.
        registry.removeAllSharedRooms()
        for hub in hubs { hub.sessions.removeAll() }
    }
}
