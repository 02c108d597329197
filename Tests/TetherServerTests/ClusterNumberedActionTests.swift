import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
import TetherServer
import TetherTesting

/// Numbered actions on a cluster, in process: a forwarded repeat is answered by the owner from
/// its record, and the log's entries carry the numbers they applied, so after the owner dies
/// the new owner answers a repeat with the first ack instead of running it again.
@Suite("Cluster in process: numbered actions")
struct ClusterNumberedActionTests {
    static let clientID = "client-0123456789abcdef"

    static func connected(_ node: TestServer) -> TestClient {
        let client = node.connect()
        client.send(.hello(client: clientID))
        client.send(.join(room: "ledger:t"))
        client.discardReceived()
        return client
    }

    static func add(_ client: TestClient, _ item: String, id: Int, seq: Int) -> [ServerMessage] {
        client.send(.action(room: "ledger:t", name: "add", args: ["id": .string(item), "by": 1], id: id, seq: seq))
        return client.receiveAll()
    }

    @Test func aForwardedRepeatIsAnsweredByTheOwnerWithoutRunning() {
        let cluster = TestCluster(nodes: 2, kinds: Demos.kinds + Demos.testKinds)
        let alice = Self.connected(cluster.nodes[0])
        _ = Self.add(alice, "a1", id: 1, seq: 1)  // node 0 owns the room from here
        let bob = Self.connected(cluster.nodes[1])
        #expect(Self.add(bob, "b1", id: 1, seq: 2).last == .ack(id: 1, room: "ledger:t", version: 2))
        #expect(Self.add(bob, "b1", id: 2, seq: 2) == [.ack(id: 2, room: "ledger:t", version: 2)], "forwarded again: answered, not run")
        #expect(bob.state(of: "ledger:t")?["recent"] == ["a1", "b1"])
    }

    @Test func afterTheOwnerDiesTheNewOwnerAnswersARepeatFromTheLog() {
        let cluster = TestCluster(nodes: 3, kinds: Demos.kinds + Demos.testKinds)
        let alice = Self.connected(cluster.nodes[0])
        #expect(Self.add(alice, "a1", id: 1, seq: 1).last == .ack(id: 1, room: "ledger:t", version: 1))
        let carol = Self.connected(cluster.nodes[2])
        _ = carol.receiveAll()

        // The owner dies (stopped, cut off). Alice's client, which never got an answer it trusts,
        // connects to another node and sends her action again under the same number.
        cluster.pause(0)
        cluster.disconnect(0)
        let again = Self.connected(cluster.nodes[1])
        again.send(.action(room: "ledger:t", name: "add", args: ["id": "a1", "by": 1], id: 1, seq: 1))
        cluster.advance(by: .seconds(5))
        let answers = again.receiveAll()
        #expect(answers.last == .ack(id: 1, room: "ledger:t", version: 1), "the first ack, from the log's record: \(answers)")
        #expect(!answers.contains { $0.type == "patch" }, "nothing ran again")
        #expect(again.state(of: "ledger:t")?["recent"] == ["a1"] && again.state(of: "ledger:t")?["count"] == 1)
        // The new owner goes on with new numbers as usual.
        #expect(Self.add(again, "a2", id: 2, seq: 2).last == .ack(id: 2, room: "ledger:t", version: 2))
        _ = carol.receiveAll()
        #expect(carol.state(of: "ledger:t") == again.state(of: "ledger:t"))
    }
}
