import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport

/// Presence through a real tetherd: two hand-written WebSocket clients see each other arrive,
/// change and vanish (docs/PROTOCOL.md, Presence), and the client library mirrors it.
@Suite("End to end: presence", .serialized)
@MainActor
struct PresenceEndToEndTests {
    /// Past the hello: the session id it carries is the connection's member id.
    static func connect(_ daemon: Daemon) throws -> (socket: RawWebSocket, id: String) {
        let socket = try RawWebSocket(port: daemon.port)
        let hello = try socket.receiveJSON()
        return (socket, hello["session"]?.stringValue ?? "")
    }

    static func types(_ socket: RawWebSocket, count: Int) throws -> [JSON] {
        try (0..<count).map { _ in try socket.receiveJSON() }
    }

    @Test func membersArriveChangeAndVanishWithTheirConnection() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (alice, aliceID) = try Self.connect(daemon), (bob, bobID) = try Self.connect(daemon)
        try alice.sendText(#"{"type":"join","room":"todo","id":1,"presence":{"name":"alice"}}"#)
        let aliceJoin = try Self.types(alice, count: 3)
        #expect(aliceJoin.map { $0["type"]?.stringValue } == ["snapshot", "presence", "ack"])
        #expect(aliceJoin[1]["members"] == [aliceID: ["user": .string(aliceID), "data": ["name": "alice"]]])
        let start = aliceJoin[1]["version"]?.intValue ?? -1

        try bob.sendText(#"{"type":"join","room":"todo","id":1,"presence":{"name":"bob"}}"#)
        let bobJoin = try Self.types(bob, count: 3)
        #expect(bobJoin.map { $0["type"]?.stringValue } == ["snapshot", "presence", "ack"])
        #expect(bobJoin[1]["members"]?.objectValue.map { Set($0.keys) } == [aliceID, bobID])
        let added = try alice.receiveJSON()
        #expect(added == ["type": "presence_patch", "room": "todo", "from": .int(start), "version": .int(start + 1),
                          "ops": [["op": "add", "path": .string("/" + bobID), "value": ["user": .string(bobID), "data": ["name": "bob"]]]]])

        try bob.sendText(#"{"type":"presence","room":"todo","data":{"name":"bob","editing":"t1"},"id":2}"#)
        // The ack does not wait for the presence window (250 ms by default); the change follows it.
        #expect(try Self.types(bob, count: 2).map { $0["type"]?.stringValue } == ["ack", "presence_patch"])
        #expect(try alice.receiveJSON()["ops"] == [["op": "replace", "path": .string("/\(bobID)/data"), "value": ["name": "bob", "editing": "t1"]]])

        try bob.sendText(#"{"type":"presence","room":"todo","data":{"name":"\#(String(repeating: "b", count: 1100))"},"id":3}"#)
        let refused = try bob.receiveJSON()
        #expect(refused["code"] == "too_large" && refused["id"] == 3)

        // Gone without a close frame: the server sees the socket end and the member leaves.
        shutdown(bob.socket.fd, Int32(SHUT_RDWR))
        let removed = try alice.receiveJSON(timeout: .seconds(10))
        #expect(removed["type"] == "presence_patch" && removed["ops"] == [["op": "remove", "path": .string("/" + bobID)]])
        #expect(removed["version"]?.intValue == start + 3)
    }

    @Test func aSilentPeerLeavesWithinTheKeepaliveTimeout() throws {
        let daemon = try Daemon(arguments: ["--ping-seconds", "1", "--peer-timeout-seconds", "3"])
        defer { daemon.stop() }
        let (alice, _) = try Self.connect(daemon), (bob, bobID) = try Self.connect(daemon)
        try alice.sendText(#"{"type":"join","room":"counter","presence":{"name":"alice"}}"#)
        _ = try Self.types(alice, count: 2)
        try bob.sendText(#"{"type":"join","room":"counter","presence":{"name":"bob"}}"#)
        _ = try alice.receiveJSON()  // bob's add
        // bob reads nothing from now on, so he answers no ping; alice's reads answer hers.
        let silentSince = ContinuousClock.now
        let removed = try alice.receiveJSON(timeout: .seconds(10)) { $0["type"] == "presence_patch" }
        #expect(removed["ops"] == [["op": "remove", "path": .string("/" + bobID)]])
        let waited = ContinuousClock.now - silentSince
        #expect(waited >= .seconds(2) && waited < .seconds(7), "left after \(waited) with a 3 s peer timeout")
        withExtendedLifetime(bob) {}
    }

    @Test func theClientLibraryMirrorsWhoIsHere() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        func client(_ name: String) async throws -> TetherClient {
            var options = ClientOptions(url: daemon.url)
            options.presence = ["name": .string(name)]
            let client = TetherClient(options: options)
            try client.connect()
            try await client.waitUntilConnected()
            return client
        }
        let kim = try await client("kim"), lee = try await client("lee")
        let kimRoom = kim.room("counter"), leeRoom = lee.room("counter")
        try await eventually("both see both") { kimRoom.presentNames == ["kim", "lee"] && leeRoom.presentNames == ["kim", "lee"] }
        try await leeRoom.setPresence(["name": "lee", "editing": "t1"])
        try await eventually("kim sees lee's update") { kimRoom.members[lee.session ?? ""]?.data["editing"] == "t1" }
        leeRoom.leave()
        #expect(leeRoom.members.count == 0, "a room left lists nobody")
        try await eventually("lee left") { kimRoom.presentNames == ["kim"] }
        await lee.close()
        #expect(kimRoom.state["count"] != nil, "the state stream is there too")
        await kim.close()
    }

    @Test func aSpectatorClientSeesWhoIsHereWithoutBeingListed() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        func client(_ configure: (inout ClientOptions) -> Void) async throws -> TetherClient {
            var options = ClientOptions(url: daemon.url)
            configure(&options)
            let client = TetherClient(options: options)
            try client.connect()
            try await client.waitUntilConnected()
            return client
        }
        let kim = try await client { $0.presence = ["name": "kim"] }, screen = try await client { $0.watchPresence = true }
        let kimRoom = kim.room("todo"), screenRoom = screen.room("todo")
        try await eventually("the screen sees kim") { screenRoom.presentNames == ["kim"] }
        let lee = try await client { $0.presence = ["name": "lee"] }
        let leeRoom = lee.room("todo")
        try await eventually("the screen sees lee arrive") { screenRoom.presentNames == ["kim", "lee"] }
        try await eventually("the members see each other") { leeRoom.presentNames == ["kim", "lee"] && kimRoom.presentNames == ["kim", "lee"] }
        #expect(kimRoom.members[screen.session ?? ""] == nil && kimRoom.members.count == 2, "the screen is never listed")
        await lee.close()
        try await eventually("the screen sees lee go") { screenRoom.presentNames == ["kim"] }
        await screen.close()
        await kim.close()
    }

    /// The load tool's presence churn: subscribers joining with presence and reconnecting get
    /// every presence frame besides a clean room stream (no violation, every delivery once).
    @Test func tetherLoadChurnsMembersOfAPresenceRoomCleanly() throws {
        let daemon = try Daemon(arguments: ["--test-kinds", "--memory-only"])
        defer { daemon.stop() }
        let clients = 20
        let run = try runProgram(Daemon.executable("tether-load"), [
            "--url", daemon.url, "--server-pid", String(daemon.pid), "--kind", "bench-presence", "--presence",
            "--clients", String(clients), "--rate", "20", "--churn", "5", "--duration", "2", "--warmup", "0.5", "--json", "--quiet",
        ], timeout: .seconds(60))
        #expect(run.status == 0, "tether-load failed:\n\(run.stderr)\n\(run.stdout)")
        let result = try JSON(parsing: run.stdout.split(separator: "\n").last.map(String.init) ?? "")
        for key in ["lost", "duplicates", "gaps", "out_of_order", "protocol_errors", "errors"] {
            #expect(result[key]?.intValue == 0, "\(key) should be 0: \(result)")
        }
        // A snapshot per join and rejoin, plus the changes: with the daemon's 250 ms presence
        // window at most one frame per member per window (about 4 a second over a run of about
        // 3 s; one frame per change would be over 20 per member here).
        let presenceFrames = try #require(result["presence_frames"]?.intValue)
        let reconnects = result["reconnects"]?.intValue ?? 0
        #expect(reconnects > 0, "churn reconnected subscribers: \(result)")
        #expect(presenceFrames >= clients + reconnects, "a presence snapshot per join: \(result)")
        #expect(presenceFrames <= clients + reconnects + clients * 20, "changes coalesced per window: \(result)")
    }
}
