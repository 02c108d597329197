import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
import TetherServer
import TetherTesting

/// The server core in process: real hub and rooms, in-memory connections, a virtual clock.
@Suite("Hub in process")
struct HubTests {
    let server = TestServer(kinds: Demos.kinds + Demos.testKinds)

    /// A client past its hello.
    func client(from address: String = "127.0.0.1") -> TestClient {
        let client = server.connect(from: address)
        #expect(client.receive()?.type == "hello")
        return client
    }

    @Test func joinActAndEveryoneConverges() throws {
        let alice = client(), bob = client()
        alice.send(.join(room: "counter", id: 1))
        bob.send(.join(room: "counter"))
        #expect(alice.receiveAll().map(\.type) == ["snapshot", "ack"])
        alice.send(.action(room: "counter", name: "increment", args: ["by": 2], id: 2))
        let messages = alice.receiveAll()
        #expect(messages.map(\.type) == ["patch", "ack"], "the patch reaches the sender before its ack")
        #expect(messages.last == .ack(id: 2, room: "counter", version: 1))
        _ = bob.receiveAll()
        #expect(bob.state(of: "counter") == ["count": 2])
        #expect(alice.state(of: "counter") == ["count": 2])
        #expect(alice.gaps.isEmpty && bob.gaps.isEmpty)
    }
}
