import Testing
import TetherDemos
import TetherTesting

/// A node's subscription to a room's log reaches the other NATS servers a moment after its own:
/// a message republished in that moment is lost to it. In a room that then stays quiet, no later
/// message shows the gap; the replica's read a second after loading brings it.
@Suite("Cluster: a republished message lost to a node that just loaded the room")
struct ClusterLostRepublishTests {
    @Test func theReplicaReadsItOnceMoreAfterLoading() {
        let cluster = TestCluster(nodes: 2, kinds: Demos.kinds)
        let alice = cluster.nodes[0].connect(), bob = cluster.nodes[1].connect()
        alice.send(.join(room: "counter"))
        alice.send(.action(room: "counter", name: "increment", args: [:], id: 1))
        cluster.advance(by: .milliseconds(100))
        #expect(alice.receiveAll().contains(.ack(id: 1, room: "counter", version: 1)))

        bob.send(.join(room: "counter"))
        cluster.advance(by: .milliseconds(100))
        #expect(bob.receiveAll().contains { if case .snapshot(_, _, 1, _) = $0 { true } else { false } })
        // The next step is republished before bob's node has interest in it, and nothing follows.
        cluster.transport.loseRepublished(to: cluster.names[1])
        alice.send(.action(room: "counter", name: "increment", args: [:], id: 2))
        cluster.advance(by: .milliseconds(100))
        #expect(alice.receiveAll().contains(.ack(id: 2, room: "counter", version: 2)))
        #expect(bob.receiveAll().isEmpty, "lost on the way")
        cluster.advance(by: .seconds(1))
        let caughtUp = bob.receiveAll()
        #expect(caughtUp.contains { if case .patch(_, _, 1, 2, _) = $0 { true } else { false } }, "\(caughtUp)")
    }
}
