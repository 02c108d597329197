import Logging
import Synchronization
import Testing
import TetherDemos
import TetherServer
import TetherTesting

/// A room no node can take over (its owner gone, the owners bucket taking no writes, as
/// nats-server 2.9.10's did for minutes in the soak) is logged once, with the reason, and when
/// it is served again.
@Suite("Cluster: a room without an owner is logged")
struct ClusterOwnerlessWarningTests {
    final class Lines: LogHandler, @unchecked Sendable {
        let lines = Mutex<[String]>([])
        var logLevel: Logger.Level = .info
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { lines.withLock { $0.append("\(event.level) \(event.message)") } }
        func matching(_ text: String) -> [String] { lines.withLock { $0.filter { $0.contains(text) } } }
    }

    @Test func aRoomNoNodeCanTakeOverIsLoggedOnceWithItsReason() {
        let log = Lines()
        let cluster = TestCluster(nodes: 2, kinds: Demos.kinds + Demos.testKinds, logger: Logger(label: "test") { _ in log })
        let alice = cluster.nodes[0].connect(), bob = cluster.nodes[1].connect()
        alice.send(.join(room: "ledger:t"))
        alice.send(.action(room: "ledger:t", name: "add", args: ["id": "a1", "by": 1], id: 1))
        bob.send(.join(room: "ledger:t"))
        cluster.advance(by: .milliseconds(100))
        #expect(alice.receiveAll().contains(.ack(id: 1, room: "ledger:t", version: 1)), "the first node owns the room")

        cluster.transport.refuseWrites(bucket: "TETHER_OWNERS", true)
        cluster.disconnect(0)  // the owner is gone; its lease expires, and nobody can write a new one
        cluster.advance(by: .seconds(9))
        #expect(log.matching("could not take it over").isEmpty, "not before 10 s of failed tries")
        cluster.advance(by: .seconds(10))
        let warnings = log.matching("could not take it over")
        #expect(warnings.count == 1 && warnings.first?.hasPrefix("warning") == true, "\(warnings)")
        #expect(warnings.first?.contains("its lease was not created") == true, "the reason: \(warnings)")
        cluster.advance(by: .seconds(10))
        #expect(log.matching("could not take it over").count == 1, "once per outage")

        cluster.transport.refuseWrites(bucket: "TETHER_OWNERS", false)
        cluster.advance(by: .seconds(2))
        #expect(log.matching("is served again").count == 1, "\(log.lines.withLock { $0 })")
        bob.send(.action(room: "ledger:t", name: "add", args: ["id": "b1", "by": 1], id: 2))
        cluster.advance(by: .milliseconds(100))
        #expect(bob.receiveAll().contains(.ack(id: 2, room: "ledger:t", version: 2)), "the second node owns the room")
    }
}
