import Logging
import TetherServer
import TetherState

/// Several nodes of one Tether cluster in process, on one virtual clock and a cluster transport
/// in memory (`MemoryCluster`, with JetStream's rules: checked appends, message ids, republish,
/// KV revisions and lease expiry). Each node is a `TestServer` with its own scheduler, running
/// tetherd's cluster code (owners, logs, replicas, forwarded actions), so failover and fencing
/// run here deterministically, beside the end-to-end tests on real NATS.
///
/// ```swift
/// let cluster = TestCluster(nodes: 2, kinds: Demos.kinds)
/// let alice = cluster.nodes[0].connect()
/// cluster.pause(0)            // as SIGSTOP: the node runs nothing, its lease runs out
/// cluster.advance(by: .seconds(5))
/// ```
public final class TestCluster {
    public let clock = TestClock()
    public let transport: MemoryCluster
    public private(set) var nodes: [TestServer] = []
    /// Node names: n1, n2, ...
    public let names: [String]
    private var paused: Set<Int> = []
    private let configuration: ServerConfiguration

    /// A cluster configuration: `TestServer`'s defaults with a 3-second lease.
    public static var defaultConfiguration: ServerConfiguration { TestServer.defaultConfiguration }

    public init(nodes count: Int = 3, configuration: ServerConfiguration = TestCluster.defaultConfiguration, kinds: [ViewModelKind],
                shards: Int = TestServer.defaultShards, logger: Logger = TestServer.quietLogger) {
        transport = MemoryCluster(clock: clock)
        self.configuration = configuration
        names = (1...count).map { "n\($0)" }
        for name in names {
            let node = TestServer(node: name, cluster: transport, clock: clock, configuration: configuration, kinds: kinds,
                                  shards: shards, logger: logger)
            node.cluster = self
            nodes.append(node)
        }
    }

    /// How many entries (epoch starts and version steps) room `room`'s log holds.
    public func logLength(of room: String) -> Int { transport.log(of: room, streams: configuration.clusterStreams).count }

    /// Runs every node that is not paused until none has work left.
    public func run() {
        var rounds = 0
        repeat {
            rounds += 1
            if rounds > 10_000 { fatalError("TestCluster: the nodes did not settle in 10,000 rounds (a livelock between nodes?)") }
            for index in nodes.indices where !paused.contains(index) { nodes[index].runLocally() }
        } while nodes.indices.contains { !paused.contains($0) && nodes[$0].hasWork }
    }

    /// Moves the clock forward, running the nodes after each timer tick.
    public func advance(by duration: Duration) {
        clock.advance(by: duration) { run() }
        run()
    }

    /// Stops running node `index` (as SIGSTOP does): what reaches it waits, its timers' work
    /// waits, its lease runs out while the clock moves.
    public func pause(_ index: Int) { paused.insert(index) }

    /// Runs node `index` again (SIGCONT): it catches up on everything that waited.
    public func resume(_ index: Int) {
        paused.remove(index)
        run()
    }

    /// Node `index` loses its connection to the cluster (its calls fail, nothing reaches it).
    public func disconnect(_ index: Int) { transport.disconnect(names[index]) }

    public func reconnect(_ index: Int) {
        transport.reconnect(names[index])
        run()
    }
}
