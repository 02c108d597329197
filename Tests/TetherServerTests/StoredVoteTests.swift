import Foundation
import Logging
import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
@testable import TetherServer
import TetherTestSupport
import TetherTesting

/// The vote keeps who chose what in its stored state (`context.stored`): never published, but
/// in the same step as the totals, so a restart, a crash or a cluster's failover during an open
/// vote forgets no choice, and nobody can vote twice by waiting for one.
@Suite("Stored ViewModel state: the vote across restarts and failovers")
struct StoredVoteTests {
    static func voter(_ server: TestServer, _ user: String) -> TestClient {
        let client = server.connect()
        client.send(.hello(client: ClientMessage.makeClientID(), user: "\(user)-0123456789abcdef"))
        client.send(.join(room: "vote:lunch", id: 1))
        client.discardReceived()
        return client
    }

    static func vote(_ client: TestClient, _ option: String, id: Int) -> [ServerMessage] {
        client.send(.action(room: "vote:lunch", name: "vote", args: ["option": .string(option)], id: id))
        return client.receiveAll()
    }

    @Test func aRestartedServerRemembersWhoChoseWhat() throws {
        let directory = Daemon.temporaryDirectory()
        do {
            let server = try TestServer(dataDirectory: directory, kinds: Demos.kinds)
            _ = Self.vote(Self.voter(server, "ana"), "pizza", id: 2)
            _ = Self.vote(Self.voter(server, "bo"), "salad", id: 2)
            server.close()
        }
        let server = try TestServer(dataDirectory: directory, kinds: Demos.kinds)
        defer { server.close() }
        let ana = Self.voter(server, "ana")
        #expect(ana.state(of: "vote:lunch")?["mine"] == "pizza", "her own choice, from the stored state")
        #expect(ana.state(of: "vote:lunch")?["ballots"] == .null, "and still nobody else's")
        // She changes her mind: her vote moves, it is not counted twice.
        #expect(Self.vote(ana, "noodles", id: 2).last?.type == "ack")
        #expect(ana.state(of: "vote:lunch")?["totals"] == ["pizza": 0, "noodles": 1, "salad": 1])
        // Voting again for the same option changes nothing.
        _ = Self.vote(ana, "noodles", id: 3)
        #expect(ana.state(of: "vote:lunch")?["totals"] == ["pizza": 0, "noodles": 1, "salad": 1])
    }

    /// Without a clean stop the store has only the steps' rows: the stored state comes back by
    /// replaying each step's stored operations onto the last snapshot, as the document does.
    @Test func theStoredStateReplaysFromTheStepsAfterTheSnapshot() throws {
        let directory = Daemon.temporaryDirectory()
        let store = try RoomStore(directory: directory, durability: .batch, historyLimit: 10, logger: Logger(label: "test"))
        defer { store.close() }
        let state = RoomState(published: ["count": 0], stored: ["seen": [:]])
        var start = RoomStore.Commit(room: "tally", kind: "tally", epoch: "e1", patch: nil, version: 0, state: RoomStore.Snapshot(state), lastChange: 1)
        start.startsEpoch = true
        store.commit(start)
        for version in 1...3 {
            let patch = PatchFrame(room: "tally", epoch: "e1", from: version - 1, version: version, operations: [.replace(path: "/count", value: .int(version))])
            var step = RoomStore.Commit(room: "tally", kind: "tally", epoch: "e1", patch: patch, version: version, state: nil, lastChange: 1)
            if version != 2 {  // a step that changed only the published document stores no operations
                step.storedOperations = JSONPatch.encode([.add(path: JSONPointer(tokens: ["seen", "v\(version)"]), value: true)]).encoded()
            }
            store.commit(step)
        }
        let loaded = try #require(try store.load(room: "tally"))
        #expect(loaded.version == 3 && loaded.state == ["count": 3])
        #expect(loaded.stored == ["seen": ["v1": true, "v3": true]])
    }

    @Test func anOlderDatabaseGetsTheStoredColumnsAndItsRoomsKeepTheirDeclaredValues() throws {
        let directory = Daemon.temporaryDirectory()
        let path = try RoomStoreMigrationTests.oldDatabase(in: directory)
        do {
            let store = try RoomStore(directory: directory, durability: .batch, historyLimit: 10, logger: Logger(label: "test"))
            #expect(try store.load(room: "counter:old")?.stored == nil, "none kept: the ViewModel's stored members start as declared")
            store.close()
        }
        #expect(try DatabaseBackup.verify(path).rooms.count == 1)
    }

    /// A vote stored by a tetherd without stored state, then upgraded: its first vote stores the
    /// stored state whole, so a crash before the next snapshot (the rows after it replayed, as
    /// `kill -9` leaves them) still restores every choice.
    @Test func aRoomFromAnOlderDatabaseStoresItsStoredStateWholeFirst() throws {
        let directory = Daemon.temporaryDirectory()
        let path = try RoomStoreMigrationTests.oldDatabase(in: directory)
        let published: JSON = ["question": "Where do we eat?", "options": ["pizza", "noodles", "salad"],
                               "totals": ["pizza": 0, "noodles": 0, "salad": 0], "open": true, "ballots": nil, "voters": nil]
        do {
            let database = try SQLiteDatabase(path: path)
            try database.prepare("INSERT INTO rooms VALUES('vote:lunch', 'vote', 'e1', 3, 3, ?)").run(.blob(published.encoded()))
        }
        do {
            let server = try TestServer(dataDirectory: directory, kinds: Demos.kinds)
            _ = Self.vote(Self.voter(server, "ana"), "pizza", id: 2)
            _ = Self.vote(Self.voter(server, "bo"), "salad", id: 2)
            server.close()
        }
        // As if the daemon had died before the room's closing snapshot: the row as the old
        // database had it, the two steps after it.
        do {
            let database = try SQLiteDatabase(path: path)
            try database.prepare("UPDATE rooms SET version = 5, snapshot_version = 3, state = ?, stored = NULL WHERE name = 'vote:lunch'")
                .run(.blob(published.encoded()))
        }
        let store = try RoomStore(directory: directory, durability: .batch, historyLimit: 10, logger: Logger(label: "test"))
        defer { store.close() }
        let restored = try #require(try store.load(room: "vote:lunch"))
        #expect(restored.version == 5 && restored.state["totals"] == ["pizza": 1, "noodles": 0, "salad": 1])
        #expect(restored.stored?["choices"] == ["ana-0123456789abcdef": "pizza", "bo-0123456789abcdef": "salad"])
    }

    @Test func anOwnersDeathOnAClusterForgetsNoChoice() {
        let cluster = TestCluster(nodes: 3, kinds: Demos.kinds)
        let ana = Self.voter(cluster.nodes[0], "ana")
        #expect(Self.vote(ana, "pizza", id: 2).last?.type == "ack")  // node 0 owns the room from here
        let bo = Self.voter(cluster.nodes[1], "bo")
        #expect(Self.vote(bo, "salad", id: 2).last?.type == "ack")
        // Steps that change no stored state come between (closed and reopened): replicas keep
        // the stored state through them.
        for (id, action) in [(3, "close"), (4, "reopen")] {
            bo.send(.action(room: "vote:lunch", name: action, id: id))
            #expect(bo.receiveAll().last?.type == "ack")
        }

        // The owner dies; ana comes back through node 2, whose replica followed the log.
        cluster.pause(0)
        cluster.disconnect(0)
        let again = Self.voter(cluster.nodes[2], "ana")
        again.send(.action(room: "vote:lunch", name: "vote", args: ["option": "noodles"], id: 2))
        cluster.advance(by: .seconds(5))
        #expect(again.receiveAll().last?.type == "ack")
        #expect(again.state(of: "vote:lunch")?["totals"] == ["pizza": 0, "noodles": 1, "salad": 1],
                "the new owner knew her first choice: her vote moved")
        #expect(again.state(of: "vote:lunch")?["mine"] == "noodles")
        bo.send(.action(room: "vote:lunch", name: "close", id: 3))
        cluster.run()
        _ = bo.receiveAll()
        #expect(bo.state(of: "vote:lunch")?["ballots"] == ["ana-0123456789abcdef": "noodles", "bo-0123456789abcdef": "salad"])
    }
}
