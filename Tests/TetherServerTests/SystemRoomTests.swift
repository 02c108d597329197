import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
@testable import TetherServer
import TetherState
import TetherTesting

/// The system room `tether.server` in process: its document, its once-a-second refresh from the
/// hub's housekeeping, its bounds, and who may join it.
@Suite("System room tether.server")
struct SystemRoomTests {
    static func makeServer(_ configure: (inout ServerConfiguration) -> Void = { _ in }) -> TestServer {
        var configuration = TestServer.defaultConfiguration
        configure(&configuration)
        return TestServer(configuration: configuration, kinds: Demos.kinds)
    }

    /// A client that joined tether.server and took its snapshot.
    static func watcher(_ server: TestServer, token: String? = nil) -> TestClient {
        let client = server.connect()
        client.send(.join(room: "tether.server", id: 1, token: token))
        #expect(client.receiveAll().map(\.type) == ["hello", "snapshot", "ack"])
        return client
    }

    /// The watcher's mirror of tether.server after reading everything it was sent.
    static func document(_ watcher: TestClient) -> JSON? {
        watcher.discardReceived()
        return watcher.state(of: "tether.server")
    }

    static func paths(_ messages: [ServerMessage]) -> [String] {
        messages.flatMap { message -> [String] in
            guard case .patch(_, _, _, _, let operations) = message else { return [] }
            return operations.map { "\($0.name) \($0.path)" }
        }
    }

    @Test func theDocumentHasTheShapeThePageReads() async throws {
        let server = Self.makeServer()
        let watcher = Self.watcher(server)
        let state = try #require(Self.document(watcher))
        #expect(Set(state.objectValue?.keys ?? [:].keys) == ["server", "connections", "rooms", "rates", "recent", "roomList", "roomListTruncated", "nodes", "webhooks"])
        #expect(state["webhooks"] == .array([]), "no webhook endpoint configured")
        let facts = try #require(state["server"]?.objectValue)
        #expect(Set(facts.keys) == ["name", "version", "startedAt", "uptimeSeconds", "node", "listen", "tls", "auth", "durability", "storage", "shards"])
        #expect(facts["version"] == .string(TetherServer.version))
        #expect(facts["name"] == .string("tetherd/\(TetherServer.version)"))
        #expect(facts["node"] == .null, "a single daemon has no node name")
        #expect(facts["tls"] == false && facts["auth"] == false)
        #expect(facts["storage"] == ["kind": "memory"])
        #expect(facts["startedAt"]?.stringValue?.hasSuffix("Z") == true)
        #expect(Set(state["rates"]?.objectValue?.keys ?? [:].keys) == ["deliveriesPerSecond", "actionsPerSecond", "bytesOutPerSecond"])
        #expect(state["nodes"] == [])
        #expect(state["roomListTruncated"] == false)
    }

    @Test func onceASecondItFollowsConnectionsRoomsAndActivity() async throws {
        let server = Self.makeServer()
        let watcher = Self.watcher(server)
        server.advance(by: .seconds(1))  // the first housekeeping only sets the baseline
        let alice = server.connect(), bob = server.connect()
        alice.send(.join(room: "counter"))
        for id in 1...3 { alice.send(.action(room: "counter", name: "increment", id: id)) }
        bob.send(.join(room: "login"))
        server.advance(by: .seconds(1))

        let state = try #require(Self.document(watcher))
        #expect(state["connections"] == 3)
        #expect(state["rooms"] == 3, "counter, bob's login, tether.server")
        #expect(state["server"]?["uptimeSeconds"] == 2)
        #expect(state["rates"]?["actionsPerSecond"] == 3.0)
        #expect((state["rates"]?["deliveriesPerSecond"]?.doubleValue ?? 0) >= 3, "alice's three patches at least")
        let last = try #require(state["recent"]?.arrayValue?.last)
        #expect(last["actions"] == 3 && last["connections"] == 3)
        #expect(last["t"] == .int(server.clock.secondsSince1970))
        alice.discardReceived()
        let counterEpoch = try #require(alice.mirrors["counter"]?.epoch)
        #expect(state["roomList"] == [
            ["name": "counter", "kind": "counter", "scope": "shared", "subscribers": 1, "inMemory": true, "version": 3,
             "epoch": .string(counterEpoch), "bytes": 11, "lastChange": .int(server.clock.secondsSince1970 - 1), "members": 0],
            ["name": "login", "kind": "login", "scope": "per-session", "subscribers": 1, "inMemory": true, "instances": 1],
            ["name": "tether.server", "kind": "tether.server", "scope": "shared", "subscribers": 1, "inMemory": true,
             // Listed by the hub before the room's own tick of this second: one version behind.
             "version": .int((watcher.version(of: "tether.server") ?? 0) - 1), "epoch": .string(watcher.mirrors["tether.server"]?.epoch ?? "")],
        ])
        #expect(watcher.gaps.isEmpty)

        // A second without changes to the rooms: the patch touches no room entry.
        watcher.discardReceived()
        bob.disconnect()
        server.advance(by: .seconds(1))
        let paths = Self.paths(watcher.receiveAll())
        #expect(paths.contains("replace /connections"))
        #expect(paths.contains("remove /roomList/1"), "bob's private login went with him")
        #expect(!paths.contains { $0.hasPrefix("replace /roomList/0") }, "the counter's entry did not change")
        #expect(!paths.contains("replace /roomList"), "never the whole list")
    }

    @Test func aChangedRoomChangesOnlyItsEntrysFields() async throws {
        let server = Self.makeServer()
        let watcher = Self.watcher(server)
        let writer = server.connect()
        writer.send(.join(room: "counter"))
        server.advance(by: .seconds(2))
        watcher.discardReceived()
        writer.send(.action(room: "counter", name: "increment", id: 1))
        server.advance(by: .seconds(1))
        let roomPaths = Self.paths(watcher.receiveAll()).filter { $0.contains("/roomList") }
        // The counter's version and last change, and tether.server's version (it lists itself, a
        // version behind).
        #expect(roomPaths == ["replace /roomList/0/lastChange", "replace /roomList/0/version", "replace /roomList/1/version"])
    }

    @Test func aRoomsEntryCountsItsPresenceMembersNotItsSpectators() async throws {
        let server = Self.makeServer()
        let watcher = Self.watcher(server)
        let kim = server.connect(), lee = server.connect(), screen = server.connect()
        kim.send(.join(room: "todo", presence: ["name": "kim"]))
        lee.send(.join(room: "todo", presence: ["name": "lee"]))
        screen.send(.join(room: "todo", watchPresence: true))
        screen.send(.join(room: "bench", watchPresence: true))
        server.advance(by: .seconds(1))
        let entries = try #require(Self.document(watcher)?["roomList"]?.arrayValue)
        let index = try #require(entries.firstIndex { $0["name"] == "todo" })
        #expect(entries[index]["subscribers"] == 3 && entries[index]["members"] == 2)
        #expect(entries.first { $0["name"] == "bench" }?["members"] == nil, "a kind without presence has no count")
        lee.disconnect()
        server.advance(by: .seconds(1))
        let paths = Self.paths(watcher.receiveAll()).filter { $0.contains("/roomList") }
        #expect(paths.contains("replace /roomList/\(index)/members") && paths.contains("replace /roomList/\(index)/subscribers"))
        #expect(watcher.state(of: "tether.server")?["roomList"]?[index]?["members"] == 1)
    }

    @Test func recentHoldsFiveMinutesOneEntryASecond() async throws {
        let server = Self.makeServer()
        let watcher = Self.watcher(server)
        server.advance(by: .seconds(310))
        let recent = try #require(Self.document(watcher)?["recent"]?.arrayValue)
        #expect(recent.count == 300)
        let times = recent.compactMap { $0["t"]?.intValue }
        #expect(times == Array((server.clock.secondsSince1970 - 299)...server.clock.secondsSince1970))
        watcher.discardReceived()
        server.advance(by: .seconds(1))
        let paths = Self.paths(watcher.receiveAll()).filter { $0.contains("/recent") }
        #expect(paths == ["add /recent/300", "remove /recent/0"], "one appended, the oldest removed")
        #expect(watcher.gaps.isEmpty)
    }

    @Test func theRoomListStopsAtFiveHundred() async throws {
        let server = Self.makeServer()
        let watcher = Self.watcher(server)
        let writer = server.connect()
        for index in 0..<600 {
            writer.send(.action(room: "counter:\(index)", name: "increment", id: index))
        }
        server.advance(by: .seconds(2))
        let state = try #require(Self.document(watcher))
        #expect(state["rooms"] == 601)
        let names = try #require(state["roomList"]?.arrayValue?.compactMap { $0["name"]?.stringValue })
        #expect(names.count == 500)
        #expect(names == names.sorted())
        #expect(names.first == "counter:0")
        #expect(state["roomListTruncated"] == true)
    }

    @Test func withAuthOnlyAdminTokensOpenIt() async {
        let authority = TokenAuthority(secret: Array("s3cret".utf8))
        let server = Self.makeServer { $0.auth = authority }
        let expires = server.clock.secondsSince1970 + 600
        let everything = await authority.mint(AccessClaims(subject: "alice", expires: expires, rooms: ["*"]))
        let admin = await authority.mint(AccessClaims(subject: "ops", expires: expires, rooms: ["counter"], admin: true))
        let client = server.connect()
        client.send(.join(room: "tether.server", id: 1))
        #expect(client.receiveAll().compactMap(\.error).map(\.code) == [.unauthorized], "no token")
        client.send(.join(room: "tether.server", id: 2, token: everything))
        let refusal = client.receiveAll().compactMap(\.error).first
        #expect(refusal?.code == .unauthorized && refusal?.message.contains("admin") == true, "rooms * is not admin")
        #expect(client.state(of: "tether.server") == nil)

        client.send(.join(room: "tether.server", id: 3, token: admin))
        #expect(client.receiveAll().map(\.type) == ["snapshot", "ack"])
        #expect(client.state(of: "tether.server")?["server"]?["auth"] == true)
        client.send(.join(room: "counter", id: 4, token: admin))
        #expect(client.receiveAll().map(\.type) == ["snapshot", "ack"], "its rooms still count")
        client.send(.join(room: "todo", id: 5, token: admin))
        #expect(client.receiveAll().compactMap(\.error).map(\.code) == [.unauthorized], "admin does not cover other rooms")
    }

    @Test func itHasNoInstancesAndNoActions() async throws {
        let server = Self.makeServer()
        let client = server.connect()
        client.discardReceived()
        client.send(.join(room: "tether.server:mine", id: 1))
        let unknown = client.receiveAll().compactMap(\.error).first
        #expect(unknown?.code == .unknownRoom && unknown?.message.contains("no instances") == true)
        client.send(.action(room: "tether.server", name: "reset", id: 2))
        #expect(client.receiveAll().compactMap(\.error).map(\.code) == [.unknownAction])
        client.send(.describe(kind: "tether.server", id: 3))
        guard case .description(_, let kinds)? = client.receive() else { Issue.record("no description"); return }
        #expect(kinds == [KindDescription(name: "tether.server", scope: "shared", actions: [])])
    }

    @Test func kindNamesStartingWithTetherAreReserved() async {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = nil
        #expect(throws: StartupError.configuration("room kind tether.mine: names starting with tether. are reserved for the server's own rooms")) {
            _ = try TetherServer(configuration: configuration, kinds: Demos.kinds + [ViewModelKind("tether.mine", scope: .shared, Counter.self)])
        }
    }

    @Test func theAdminClaimIsSignedAndReadBack() async throws {
        let authority = TokenAuthority(secret: Array("s3cret".utf8))
        let admin = await authority.mint(AccessClaims(subject: "ops", expires: 2_000_000_000, rooms: [], admin: true))
        #expect(try authority.verify(admin, now: 1_900_000_000).admin)
        let plain = await authority.mint(AccessClaims(subject: "ops", expires: 2_000_000_000, rooms: ["*"]))
        #expect(try !authority.verify(plain, now: 1_900_000_000).admin)
        #expect(try authority.verify(plain, now: 1_900_000_000).payload["admin"] == nil, "absent unless granted")
    }
}
