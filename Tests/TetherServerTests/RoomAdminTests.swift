import Foundation
import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
import TetherServer
import TetherState
import TetherTestSupport
import TetherTesting

/// Room administration in process: the room list (live and stored rooms), deleting a room, idle
/// rooms expiring on the virtual clock, kinds that accept only some instances, and the limit of
/// rooms per kind. Stored rooms live in a real SQLite database in a temporary directory.
@Suite("Room administration in process")
struct RoomAdminTests {
    /// A board whose only instances are "design" and "ops".
    static let board = ViewModelKind("board", scope: .shared, Counter.self, instances: .only(["design", "ops"]))
    /// Dated rooms: "day:2026-11-24".
    static let day = ViewModelKind("day", scope: .shared, Counter.self, instances: .matching("a date such as 2026-11-24") { name in
        name.count == 10 && name.split(separator: "-").map(\.count) == [4, 2, 2]
    })

    /// Notes kept 30 minutes after their last change.
    static let note = ViewModelKind("note", scope: .shared, Counter.self, expireAfter: .seconds(1_800))

    static func storingServer(directory: String = Daemon.temporaryDirectory(),
                              _ configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> TestServer {
        var configuration = TestServer.defaultConfiguration
        configure(&configuration)
        return try TestServer(dataDirectory: directory, configuration: configuration, kinds: Demos.kinds + [board, day, note])
    }

    static func client(_ server: TestServer) -> TestClient {
        let client = server.connect()
        #expect(client.receive()?.type == "hello")
        return client
    }

    static func entry(_ server: TestServer, _ name: String) -> RoomListEntry? {
        server.roomList().first { $0.name == name }
    }

    // MARK: Listing

    @Test func storedRoomsStayListedAfterTheirClientsLeftAndAfterARestart() throws {
        let directory = Daemon.temporaryDirectory()
        let server = try Self.storingServer(directory: directory)
        let alice = Self.client(server)
        alice.send(.join(room: "todo:nc", id: 1))
        alice.send(.action(room: "todo:nc", name: "add", args: ["title": "milk"], id: 2))
        alice.send(.action(room: "counter", name: "increment", args: ["by": 3], id: 3))
        alice.discardReceived()
        let start = server.clock.secondsSince1970

        let live = try #require(Self.entry(server, "todo:nc"))
        #expect(live.inMemory && live.subscribers == 1 && live.version == 1 && live.kind == "todo" && live.scope == "shared")
        #expect(live.lastChange == start)
        #expect((live.bytes ?? 0) >= #"{"items":[{"done":false,"id":"t1","title":"milk"}]}"#.utf8.count)

        alice.disconnect()
        server.advance(by: .seconds(61))  // past --idle-room-seconds: both rooms leave memory
        #expect(server.roomCount == 0)
        let names = server.roomList().map(\.name)
        #expect(names == ["counter", "todo:nc"], "stored rooms are listed after their clients left: \(names)")
        let stored = try #require(Self.entry(server, "todo:nc"))
        #expect(!stored.inMemory && stored.subscribers == 0 && stored.version == 1 && stored.lastChange == start)
        #expect(stored.epoch == nil, "no epoch for a room that is not in memory")
        #expect(Self.entry(server, "counter")?.version == 1)
        server.close()

        let restarted = try Self.storingServer(directory: directory)
        defer { restarted.close() }
        let after = try #require(Self.entry(restarted, "todo:nc"), "the list is read from the database at start")
        #expect(!after.inMemory && after.version == 1 && after.lastChange == start && after.kind == "todo")
        #expect(after.bytes == #"{"items":[{"done":false,"id":"t1","title":"milk"}]}"#.utf8.count, "exact once stored")
    }

    @Test func theListHasPerSessionKindsAndTheServersOwnRoom() throws {
        let server = try Self.storingServer()
        defer { server.close() }
        let alice = Self.client(server)
        alice.send(.join(room: "login"))
        alice.send(.join(room: "tether.server"))
        server.advance(by: .seconds(1))
        let list = server.roomList()
        #expect(list.map(\.name) == ["login", "tether.server"])
        #expect(list[0].scope == "per-session" && list[0].instances == 1 && list[0].inMemory)
        #expect(list[1].subscribers == 1 && list[1].inMemory)
    }

    // MARK: Deleting

    /// Two socket shards: a join on the other shard that comes after the delete but before that
    /// shard hears of it gets the new room, counted as its subscriber, and no room_deleted.
    @Test func aJoinOnAnotherShardRightAfterADeleteGetsTheNewRoom() throws {
        let server = TestServer(kinds: Demos.kinds, shards: 2)
        defer { server.close() }
        let alice = Self.client(server), bob = Self.client(server), carol = Self.client(server)  // shards 0, 1, 0
        alice.send(.join(room: "todo:nc"))
        bob.send(.join(room: "todo:nc"))
        alice.send(.action(room: "todo:nc", name: "add", args: ["title": "milk"], id: 1))
        _ = [alice, bob].map { $0.discardReceived() }

        // The delete runs on the room service's queue; bob's join is queued before shard 1 hears of it.
        let rooms = server.rooms
        rooms.queue.execute { _ = rooms.deleteRoom(named: "todo:nc") }
        bob.send(.join(room: "todo:nc", id: 2))
        #expect(alice.receiveAll().first?.error?.code == .roomDeleted)
        #expect(bob.receiveAll().map(\.type) == ["snapshot", "ack"], "bob is in the new room, not told it was deleted")
        #expect(bob.state(of: "todo:nc")?["items"]?.arrayValue?.isEmpty == true)
        #expect(Self.entry(server, "todo:nc")?.subscribers == 1)

        carol.send(.action(room: "todo:nc", name: "add", args: ["title": "bread"], id: 3))
        #expect(bob.receiveAll().map(\.type) == ["patch"])
        #expect(bob.state(of: "todo:nc")?["items"]?.arrayValue?.count == 1)
        bob.send(.leave(room: "todo:nc"))
        #expect(Self.entry(server, "todo:nc")?.subscribers == 0)
    }

    @Test func deletingARoomEndsItsSubscribersStreamsAndARejoinGetsANewEmptyRoom() throws {
        let server = try Self.storingServer()
        defer { server.close() }
        let alice = Self.client(server), bob = Self.client(server), bystander = Self.client(server)
        alice.send(.join(room: "todo:nc", id: 1))
        bob.send(.join(room: "todo:nc"))
        bystander.send(.join(room: "counter"))
        alice.send(.action(room: "todo:nc", name: "add", args: ["title": "milk"], id: 2))
        _ = [alice, bob, bystander].map { $0.discardReceived() }
        let oldEpoch = try #require(alice.mirrors["todo:nc"]?.epoch)

        #expect(server.deleteRoom("todo:nc") == .deleted(wasInMemory: true, subscribers: 2))
        for client in [alice, bob] {
            let messages = client.receiveAll()
            #expect(messages.count == 1)
            let error = try #require(messages.first?.error)
            #expect(error.code == .roomDeleted && error.room == "todo:nc" && error.id == nil)
            #expect(error.message.contains("deleted"))
        }
        #expect(bystander.receiveAll().isEmpty, "other rooms are untouched")
        #expect(Self.entry(server, "todo:nc") == nil)

        // The stream ended: a change made now (in a new room) reaches nobody who has not joined it.
        bystander.send(.action(room: "todo:nc", name: "add", args: ["title": "bread"], id: 1))
        #expect(bystander.receiveAll() == [.ack(id: 1, room: "todo:nc", version: 1)])
        #expect(alice.receiveAll().isEmpty && bob.receiveAll().isEmpty)
        alice.send(.join(room: "todo:nc", id: 3))
        let snapshot = alice.receiveAll()
        #expect(snapshot.map(\.type) == ["snapshot", "ack"])
        #expect(alice.mirrors["todo:nc"]?.epoch != oldEpoch, "a new room is a new epoch")
        #expect(alice.state(of: "todo:nc")?["items"]?.arrayValue?.count == 1, "only the change made after the delete")
        #expect(alice.gaps.isEmpty && bob.gaps.isEmpty)
    }

    @Test func aStoredRoomIsDeletedFromTheDatabase() throws {
        let directory = Daemon.temporaryDirectory()
        let server = try Self.storingServer(directory: directory)
        let alice = Self.client(server)
        alice.send(.action(room: "counter:old", name: "increment", args: ["by": 5], id: 1))
        alice.send(.action(room: "counter:kept", name: "increment", id: 2))
        server.advance(by: .seconds(61))
        #expect(Self.entry(server, "counter:old")?.inMemory == false)
        #expect(server.deleteRoom("counter:old") == .deleted(wasInMemory: false, subscribers: 0))
        #expect(server.deleteRoom("counter:old") == .notFound("no room counter:old"))
        #expect(server.roomList().map(\.name) == ["counter:kept"])
        alice.send(.join(room: "counter:old", id: 3))
        alice.discardReceived()
        #expect(alice.state(of: "counter:old") == ["count": 0], "joined again: a new, empty room")
        alice.send(.leave(room: "counter:old"))
        server.close()

        let restarted = try Self.storingServer(directory: directory)
        defer { restarted.close() }
        #expect(Self.entry(restarted, "counter:old")?.version == 0, "the deleted history is gone from the database")
        #expect(Self.entry(restarted, "counter:kept")?.version == 1)
    }

    @Test func whatCannotBeDeletedSaysWhy() throws {
        let server = try Self.storingServer()
        defer { server.close() }
        #expect(server.deleteRoom("nosuchkind:x") == .notFound("no room nosuchkind:x: no kind nosuchkind"))
        #expect(server.deleteRoom("counter:never-made") == .notFound("no room counter:never-made"))
        guard case .refused(let own) = server.deleteRoom("tether.server"), case .refused(let login) = server.deleteRoom("login") else {
            Issue.record("the server's own room and per-session rooms are refused")
            return
        }
        #expect(own.contains("server's own room") && login.contains("per-session"))
    }

    // MARK: Expiry

    @Test func idleRoomsOfAKindWithAnExpiryAreDeletedOnTheVirtualClock() throws {
        let server = try Self.storingServer { $0.roomExpiry = ["todo": .seconds(600), "vote": .zero] }
        defer { server.close() }
        let alice = Self.client(server), watcher = Self.client(server)
        alice.send(.action(room: "todo:idle", name: "add", args: ["title": "x"], id: 1))
        alice.send(.action(room: "todo:watched", name: "add", args: ["title": "x"], id: 2))
        alice.send(.action(room: "counter:idle", name: "increment", id: 3))
        alice.send(.action(room: "vote:idle", name: "close", id: 4))
        alice.send(.action(room: "note:idle", name: "increment", id: 5))
        watcher.send(.join(room: "todo:watched"))
        alice.discardReceived()
        watcher.discardReceived()

        server.advance(by: .seconds(540))
        #expect(Self.entry(server, "todo:idle") != nil, "9 minutes: not yet")
        server.advance(by: .seconds(120))
        let names = server.roomList().map(\.name)
        #expect(!names.contains("todo:idle"), "unchanged and unwatched for 10 minutes: deleted (\(names))")
        #expect(names.contains("todo:watched"), "a room with a subscriber never expires")
        #expect(names.contains("counter:idle"), "counter has no expiry")
        #expect(names.contains("vote:idle"), "the setting turned vote's own 30 days off")
        #expect(watcher.receiveAll().isEmpty)

        // A change restarts the count; a kind's own expiry applies without the setting.
        watcher.send(.leave(room: "todo:watched"))
        alice.send(.action(room: "todo:watched", name: "add", args: ["title": "y"], id: 6))
        server.advance(by: .seconds(540))
        #expect(Self.entry(server, "todo:watched") != nil)
        server.advance(by: .seconds(120))
        #expect(Self.entry(server, "todo:watched") == nil)
        #expect(Self.entry(server, "note:idle") != nil)
        server.advance(by: .seconds(1_200))
        #expect(Self.entry(server, "note:idle") == nil, "the kind's own expiry: 30 minutes")
        #expect(Self.entry(server, "counter:idle") != nil)
    }

    @Test func theRoomExpirySettingReadsAndWritesBack() async throws {
        var configuration = ServerConfiguration()
        let option = try #require(ServerConfiguration.options.first { $0.key == "room-expiry" })
        #expect(option.isReloadable)
        let loaded = try ConfigurationLoader().load(arguments: ["--room-expiry", "todo=30d, bench=12h,vote=never,x=90m"], environment: [:])
        configuration = loaded.configuration
        #expect(configuration.roomExpiry == ["todo": .days(30), "bench": .seconds(43_200), "vote": .zero, "x": .seconds(5_400)])
        #expect(option.value(in: configuration) == "bench=12h,todo=30d,vote=never,x=90m")
        for bad in ["todo", "todo=30", "todo=-1d", "=3d", "todo=3w"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ConfigurationLoader().load(arguments: ["--room-expiry", bad], environment: [:]) }
        }
        var unknownKind = TestServer.defaultConfiguration
        unknownKind.roomExpiry = ["todos": .days(1)]
        #expect(throws: StartupError.self) { try TetherServer(configuration: unknownKind, kinds: Demos.kinds) }
        // A reload naming a kind the server does not have changes nothing.
        let server = try TetherServer(configuration: TestServer.defaultConfiguration, kinds: Demos.kinds)
        await #expect(throws: ConfigurationError.self) { try await server.reload(unknownKind) }
        #expect(server.configuration.roomExpiry.isEmpty)
        var known = TestServer.defaultConfiguration
        known.roomExpiry = ["todo": .days(1)]
        try await server.reload(known)
        #expect(server.configuration.roomExpiry == ["todo": .days(1)])
    }

    // MARK: Instances and the per-kind limit

    @Test func aKindWithListedInstancesRefusesOthers() throws {
        let server = try Self.storingServer()
        defer { server.close() }
        let client = Self.client(server)
        for room in ["board", "board:design", "board:ops", "day:2026-11-24", "clock"] {
            client.send(.join(room: room, id: 1))
            #expect(client.receiveAll().map(\.type) == ["snapshot", "ack"], "\(room) exists")
        }
        let refusals: [(String, String)] = [
            ("board:marketing", #"no room "board:marketing": the instances of board are: design, ops"#),
            ("day:tomorrow", #"no room "day:tomorrow": the instances of day are: a date such as 2026-11-24"#),
            ("clock:utc", #"no room "clock:utc": clock has no instances: its only room is clock"#),
        ]
        for (room, message) in refusals {
            client.send(.join(room: room, id: 2))
            client.send(.action(room: room, name: "increment", id: 3))
            let errors = client.receiveAll().compactMap(\.error)
            #expect(errors.map(\.code) == [.unknownRoom, .unknownRoom], "\(room)")
            #expect(errors.map(\.message) == [message, message])
        }
        #expect(!server.roomList().contains { $0.name == "board:marketing" || $0.name == "clock:utc" })
    }

    @Test func theLimitOfRoomsPerKindRefusesNewInstancesOnly() throws {
        let server = try Self.storingServer { $0.maxRoomsPerKind = 2 }
        defer { server.close() }
        let client = Self.client(server)
        client.send(.action(room: "counter:a", name: "increment", id: 1))
        client.send(.join(room: "counter:b", id: 2))
        client.send(.leave(room: "counter:b"))
        client.discardReceived()
        server.advance(by: .seconds(61))  // both leave memory: stored rooms count too
        #expect(server.roomCount == 0)

        client.send(.join(room: "counter:c", id: 3))
        client.send(.action(room: "counter:d", name: "increment", id: 4))
        let errors = client.receiveAll().compactMap(\.error)
        #expect(errors.map(\.code) == [.rateLimited, .rateLimited])
        #expect(errors.first?.message == "counter has its maximum of 2 rooms (--max-rooms-per-kind): use an existing one, or delete some (tether rooms delete NAME)")
        #expect(errors.map(\.id) == [3, 4] && errors.allSatisfy { $0.room != nil })

        client.send(.action(room: "counter:a", name: "increment", id: 5))
        client.send(.join(room: "todo:x", id: 6))
        #expect(client.receiveAll().filter { $0.type == "ack" }.count == 2, "existing rooms and other kinds keep working")

        #expect(server.deleteRoom("counter:b") == .deleted(wasInMemory: false, subscribers: 0))
        client.send(.action(room: "counter:c", name: "increment", id: 7))
        #expect(client.receiveAll() == [.ack(id: 7, room: "counter:c", version: 1)], "a deletion makes room")
    }
}
