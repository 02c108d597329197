#if canImport(Glibc)
import Dispatch
import Glibc
#endif
import Logging
import TetherJSON
import TetherProtocol
import TetherServer
import TetherState

/// The server core in process, with no sockets and a virtual clock: clients are in-memory
/// connections to a real `SessionHub` and real rooms, everything runs on the test's thread when
/// the test says so, and time moves only with `advance(by:)`. (Hummingbird's in-process test
/// mode and centrifuge's test transport are the models.)
///
/// ```swift
/// let server = TestServer(kinds: Demos.kinds)
/// let alice = server.connect()
/// alice.send(.join(room: "counter"))
/// #expect(alice.receive()?.type == "snapshot")
/// ```
///
/// With several socket shards (`shards:`, or `TETHER_TEST_SHARDS` for a whole test run) each
/// shard has a hub of its own, as in tetherd, and connections are handed to them in turn.
public final class TestServer {
    public let clock: TestClock
    public let scheduler: ManualScheduler
    /// The server's rooms, their administration and housekeeping.
    public let rooms: RoomService
    /// The first shard's hub.
    public var hub: SessionHub { hubs[0] }
    /// One hub per socket shard.
    public let hubs: [SessionHub]
    public let configuration: ServerConfiguration
    private var connections: [TestConnection] = []
    /// The hub serving each connection.
    private var hubOf: [ObjectIdentifier: SessionHub] = [:]
    /// Where shared rooms are kept, for a server made with a data directory.
    private let store: RoomStore?

    /// A memory-only configuration with the usual defaults, except that presence changes go
    /// out at once (a test reads them without advancing time past the presence window).
    public static var defaultConfiguration: ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = nil
        configuration.presenceWindow = .zero
        return configuration
    }

    /// A server that keeps nothing beyond its rooms in memory (`configuration.dataDirectory` is
    /// not used).
    public convenience init(configuration: ServerConfiguration = TestServer.defaultConfiguration, kinds: [ViewModelKind],
                            shards: Int = TestServer.defaultShards, logger: Logger = TestServer.quietLogger) {
        let (clock, scheduler, runtime) = Self.makeRuntime()
        self.init(clock: clock, scheduler: scheduler, configuration: configuration, store: nil, shards: shards,
                  rooms: RoomService(configuration: configuration, kinds: kinds, runtime: runtime, queue: scheduler.makeHubQueue(), logger: logger))
    }

    /// Socket shards of a server made without `shards:`: `TETHER_TEST_SHARDS`, else 1.
    public static var defaultShards: Int {
        getenv("TETHER_TEST_SHARDS").flatMap { Int(String(cString: $0)) }.map { max(1, $0) } ?? 1
    }

    /// A server that keeps shared rooms in SQLite in `dataDirectory`, as tetherd does: rooms that
    /// left memory stay listed, and a new server on the same directory (after `close()`)
    /// continues them. `run()` waits for the database, so durable acks stay deterministic.
    public convenience init(dataDirectory: String, configuration: ServerConfiguration = TestServer.defaultConfiguration,
                            kinds: [ViewModelKind], shards: Int = TestServer.defaultShards, logger: Logger = TestServer.quietLogger) throws {
        let (clock, scheduler, runtime) = Self.makeRuntime()
        var configuration = configuration
        configuration.dataDirectory = dataDirectory
        let store = try RoomStore(directory: dataDirectory, durability: configuration.durability,
                                  historyLimit: configuration.historyMaxPatches, logger: logger)
        let rooms: RoomService
        do {
            rooms = try RoomService(configuration: configuration, kinds: kinds, runtime: runtime, queue: scheduler.makeHubQueue(), store: store, logger: logger)
        } catch {
            store.close()
            throw error
        }
        self.init(clock: clock, scheduler: scheduler, configuration: configuration, store: store, shards: shards, rooms: rooms)
    }

    public static var quietLogger: Logger { Logger(label: "tether.test", factory: { _ in SwiftLogNoOpLogHandler() }) }

    private static func makeRuntime(clock: TestClock = TestClock(), jobLimit: Int? = nil) -> (TestClock, ManualScheduler, ServerRuntime) {
        let scheduler = ManualScheduler(jobLimit: jobLimit)
        return (clock, scheduler, ServerRuntime(clock: clock) { _ in scheduler.makeRoomExecutor() })
    }

    /// Node `node` of a cluster in memory (`TestCluster` makes these): its shared rooms are the
    /// cluster's, on `clock`; what the cluster delivers to it runs on its own scheduler.
    convenience init(node: String, cluster: MemoryCluster, clock: TestClock, configuration: ServerConfiguration, kinds: [ViewModelKind],
                     shards: Int, logger: Logger) {
        // Nodes that keep sending each other work (a forked log would) stop the test, not hang it.
        let (clock, scheduler, runtime) = Self.makeRuntime(clock: clock, jobLimit: 100_000)
        let deliveries = scheduler.makeHubQueue()
        let connection = cluster.connect(node: node, deliver: { deliveries.execute($0) })
        let rooms = RoomService(configuration: configuration, kinds: kinds, runtime: runtime, queue: scheduler.makeHubQueue(), node: node,
                                connection: connection, keyValue: { connection.keyValue(bucket: $0, ttl: $1) }, logger: logger)
        self.init(clock: clock, scheduler: scheduler, configuration: configuration, store: nil, shards: shards, rooms: rooms)
    }

    /// Set for a node of a `TestCluster`: running one node runs them all (a forwarded action
    /// needs its owner to run).
    weak var cluster: TestCluster?

    private init(clock: TestClock, scheduler: ManualScheduler, configuration: ServerConfiguration, store: RoomStore?, shards: Int, rooms: RoomService) {
        self.clock = clock
        self.scheduler = scheduler
        self.configuration = configuration
        self.store = store
        self.rooms = rooms
        let hubs = (0..<max(1, shards)).map { _ in SessionHub(rooms: rooms, queue: scheduler.makeHubQueue()) }
        self.hubs = hubs
        scheduler.afterHubBatch.withLock { $0 = { for hub in hubs { hub.didRunQueuedWork() } } }
        for hub in hubs { hub.startHousekeeping() }
        rooms.startHousekeeping()
    }

    /// Opens a connection (the hub sends `hello`) and runs until idle.
    public func connect(from address: String = "127.0.0.1") -> TestClient {
        let connection = TestConnection(remoteAddress: address)
        let hub = hubs[connections.count % hubs.count]
        connections.append(connection)
        hubOf[ObjectIdentifier(connection)] = hub
        hub.queue.execute { hub.connectionOpened(connection) }
        run()
        return TestClient(server: self, connection: connection)
    }

    /// Runs all queued work, delivering writable calls to connections that asked for one and
    /// can take data, and hub close notifications for connections that were closed, until idle.
    public func run() {
        if let cluster { cluster.run() } else { runLocally() }
    }

    /// While set, the store's writer waits on it: nothing more is committed (`holdCommits`).
    private var commitGate: DispatchSemaphore?

    /// Stops the store from committing until `releaseCommits()`, as a slow disk would: whatever
    /// waits for a step to be durable (its patch, its ack) waits meanwhile.
    public func holdCommits() {
        guard let store, commitGate == nil else { preconditionFailure("holdCommits: a server with a data directory, not held already") }
        let gate = DispatchSemaphore(value: 0)
        commitGate = gate
        store.afterCommits { gate.wait() }
    }

    /// Lets the store commit again, and runs until idle.
    public func releaseCommits() {
        commitGate?.signal()
        commitGate = nil
        run()
    }

    /// Runs this server's own work until it is idle (a cluster node: without the other nodes).
    func runLocally() {
        repeat {
            scheduler.runUntilIdle()
            // What rooms committed, and the deliveries waiting for those commits.
            if commitGate == nil { store?.waitForWrites() }
            scheduler.runUntilIdle()
            for connection in connections where !connection.isFinished {
                if !connection.isOpen {
                    connection.isFinished = true
                    let hub = self.hub(of: connection)
                    hub.queue.execute { hub.connectionClosed(connection, closeCode: connection.closeCode) }
                } else if connection.wantsWritable, !connection.isChoked {
                    connection.wantsWritable = false
                    let hub = self.hub(of: connection)
                    hub.queue.execute { hub.connectionWritable(connection) }
                }
            }
        } while scheduler.hasWork
    }

    /// Moves the clock forward, running what each timer tick starts.
    public func advance(by duration: Duration) {
        if let cluster { return cluster.advance(by: duration) }
        clock.advance(by: duration) { run() }
        run()
    }

    /// Whether queued work waits to run.
    var hasWork: Bool { scheduler.hasWork }

    /// Delivers a received text frame to the hub.
    func receive(_ bytes: [UInt8], on connection: TestConnection) {
        let hub = self.hub(of: connection)
        hub.queue.execute {
            bytes.withUnsafeBytes { hub.connection(connection, receivedText: $0) }
        }
        run()
    }

    func receiveBinary(on connection: TestConnection) {
        let hub = self.hub(of: connection)
        hub.queue.execute { hub.connectionReceivedBinary(connection) }
        run()
    }

    private func hub(of connection: TestConnection) -> SessionHub { hubOf[ObjectIdentifier(connection)]! }

    func disconnect(_ connection: TestConnection) {
        connection.peerDisconnected()
        run()
    }

    /// Stops every room (each stores its state) and closes the database, so another server can
    /// open the same directory. The server is not used afterwards.
    public func close() {
        for hub in hubs { hub.queue.execute { hub.stopHousekeeping() } }
        rooms.stopHousekeeping()
        let rooms = self.rooms
        rooms.queue.execute { rooms.stopSharedRooms() }
        run()
        store?.close()
    }

    /// Takes reloaded settings on every shard, as `tetherd`'s reload does, and runs until idle.
    public func reconfigure(_ configuration: ServerConfiguration) {
        rooms.reconfigure(configuration)
        for hub in hubs { hub.queue.execute { hub.reconfigure(configuration) } }
        run()
    }

    /// Every room, live or stored, as `GET /rooms` lists it.
    public func roomList() -> [RoomListEntry] { onRoomService { $0.roomList() } }

    /// Deletes a room as `DELETE /rooms/NAME` does, and runs until idle.
    @discardableResult
    public func deleteRoom(_ name: String) -> RoomDeletion { onRoomService { $0.deleteRoom(named: name) } }

    /// Open connections (of every shard) and live rooms.
    public var connectionCount: Int { onRoomService { $0.openConnections } }
    public var roomCount: Int { onRoomService { $0.roomCount } }

    /// Reads on the room service's queue, as the HTTP routes and housekeeping do.
    private func onRoomService<T: Sendable>(_ read: @escaping @Sendable (RoomService) -> T) -> T {
        nonisolated(unsafe) var result: T?
        let rooms = self.rooms
        rooms.queue.execute { result = read(rooms) }
        run()
        return result!
    }
}
