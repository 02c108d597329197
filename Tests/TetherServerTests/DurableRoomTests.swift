import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
import TetherServer
import TetherTestSupport
import TetherTesting

/// A stored room in process, on a real SQLite file: nothing leaves the room (a patch, an ack, a
/// joiner's snapshot) before the version step it shows is committed (its log, `LocalRoomLog`,
/// releases output only after the store's group commit), and a restart continues the history.
@Suite("Durable rooms in process")
struct DurableRoomTests {
    static func joined(_ server: TestServer, _ room: String, id: Int) -> TestClient {
        let client = server.connect()
        client.send(.join(room: room, id: id))
        client.discardReceived()
        return client
    }

    @Test func anActionIsAckedAndSeenOnlyOnceItsStepIsStored() throws {
        let server = try TestServer(dataDirectory: Daemon.temporaryDirectory(), kinds: Demos.kinds)
        defer { server.close() }
        let alice = Self.joined(server, "counter", id: 1)
        let bob = Self.joined(server, "counter", id: 1)

        server.holdCommits()
        alice.send(.action(room: "counter", name: "increment", args: ["by": 2], id: 2))
        #expect(alice.receiveAll().isEmpty, "neither the patch nor the ack before the step is stored")
        #expect(bob.receiveAll().isEmpty, "no subscriber sees a version a crash could take back")

        server.releaseCommits()
        let received = alice.receiveAll()
        #expect(received.map(\.type) == ["patch", "ack"], "\(received)")
        if case .ack(2, "counter", let version)? = received.last { #expect(version == 1) } else { Issue.record("\(received)") }
        #expect(bob.receiveAll().map(\.type) == ["patch"])
        #expect(alice.state(of: "counter") == bob.state(of: "counter"))
    }

    @Test func aJoinersSnapshotWaitsForTheVersionItShows() throws {
        let server = try TestServer(dataDirectory: Daemon.temporaryDirectory(), kinds: Demos.kinds)
        defer { server.close() }
        let alice = Self.joined(server, "counter", id: 1)

        server.holdCommits()
        alice.send(.action(room: "counter", name: "increment", args: ["by": 5], id: 2))
        let carol = server.connect()
        carol.discardReceived()
        carol.send(.join(room: "counter", id: 1))
        #expect(carol.receiveAll().isEmpty, "her snapshot would show version 1, not stored yet")

        server.releaseCommits()
        let received = carol.receiveAll()
        #expect(received.map(\.type) == ["snapshot", "ack"], "\(received)")
        #expect(carol.version(of: "counter") == 1)
        #expect(carol.state(of: "counter")?["count"] == 5)
    }

    @Test func aRestartedServerContinuesTheStoredHistory() throws {
        let directory = Daemon.temporaryDirectory()
        var epoch = ""
        do {
            let server = try TestServer(dataDirectory: directory, kinds: Demos.kinds)
            let alice = Self.joined(server, "counter", id: 1)
            for id in 2...4 { alice.send(.action(room: "counter", name: "increment", args: ["by": 1], id: id)) }
            for message in alice.receiveAll() { if case .patch(_, let e, _, _, _) = message { epoch = e } }
            server.close()
        }
        let server = try TestServer(dataDirectory: directory, kinds: Demos.kinds)
        defer { server.close() }
        let bob = server.connect()
        bob.discardReceived()
        bob.send(.join(room: "counter", id: 1, since: ResumePoint(epoch: epoch, version: 1)))
        let received = bob.receiveAll()
        // Versions 2 and 3 from the stored history, in the same epoch (queued together, they leave merged).
        #expect(received.map(\.type) == ["patch", "ack"], "\(received)")
        if case .patch(_, epoch, 1, 3, _)? = received.first {} else { Issue.record("the stored epoch, from version 1 to 3: \(received)") }
    }
}
