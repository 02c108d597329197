import Testing
import TetherBinding
import TetherDemos
import TetherJSON
import TetherProtocol
import TetherServer
import TetherState
import TetherTesting
import TetherTestSupport

/// Presence in process (docs/DESIGN.md, Presence): a room's members as their own stream beside
/// its state, with its own versions, never persisted.
@Suite("Presence in process")
struct PresenceTests {
    static func makeServer(_ configure: (inout ServerConfiguration) -> Void = { _ in }) -> TestServer {
        var configuration = TestServer.defaultConfiguration
        configure(&configuration)
        return TestServer(configuration: configuration, kinds: Demos.kinds + [ViewModelKind("roster", scope: .shared, Roster.self)])
    }

    /// A client past its hello, with the session id the hello carried (its member id).
    static func client(_ server: TestServer) -> (client: TestClient, id: String) {
        let client = server.connect()
        guard case .hello(_, _, let session)? = client.receive() else {
            Issue.record("no hello")
            return (client, "")
        }
        return (client, session)
    }

    static func member(_ user: String, _ data: JSON) -> JSON { ["user": .string(user), "data": data] }

    @Test func aJoinWithPresenceIsListedAndTheOthersGetAPatch() async {
        let server = Self.makeServer()
        let (alice, aliceID) = Self.client(server), (bob, bobID) = Self.client(server)
        alice.send(.join(room: "counter", id: 1, presence: ["name": "alice"]))
        #expect(alice.receiveAll().map(\.type) == ["snapshot", "presence", "ack"], "presence after the room's snapshot, before the ack")
        #expect(alice.members(of: "counter") == [aliceID: Self.member(aliceID, ["name": "alice"])])
        #expect(alice.presence["counter"]?.version == 1)

        bob.send(.join(room: "counter", id: 2, presence: ["name": "bob"]))
        let bobGot = bob.receiveAll()
        #expect(bobGot.map(\.type) == ["snapshot", "presence", "ack"])
        #expect(bobGot.last == .ack(id: 2, room: "counter", version: 0), "the ack carries the room's version, not presence's")
        let aliceGot = alice.receiveAll()
        #expect(aliceGot == [.presencePatch(room: "counter", from: 1, version: 2,
                                            operations: [.add(path: JSONPointer(tokens: [bobID]), value: Self.member(bobID, ["name": "bob"]))])])
        #expect(alice.members(of: "counter") == bob.members(of: "counter"))
        #expect(bob.members(of: "counter")?[aliceID] != nil && bob.members(of: "counter")?[bobID] != nil)
        #expect(alice.gaps.isEmpty && bob.gaps.isEmpty)

        // Presence is apart from the room's state: an action moves the room's version only.
        alice.send(.action(room: "counter", name: "increment", id: 3))
        #expect(alice.receiveAll().map(\.type) == ["patch", "ack"])
        #expect(alice.state(of: "counter") == ["count": 1] && alice.presence["counter"]?.version == 2)
    }

    @Test func anUpdateReachesEveryListenerThenItsAck() async {
        let server = Self.makeServer()
        let (alice, aliceID) = Self.client(server), (bob, _) = Self.client(server)
        alice.send(.join(room: "todo", presence: ["name": "alice"]))
        bob.send(.join(room: "todo", presence: [:]))
        alice.discardReceived()
        bob.discardReceived()
        alice.send(.presence(room: "todo", data: ["name": "alice", "editing": "t3"], id: 7))
        let got = alice.receiveAll()
        #expect(got.map(\.type) == ["presence_patch", "ack"])
        #expect(got.last == .ack(id: 7, room: "todo", version: nil))
        #expect(bob.receiveAll() == [.presencePatch(room: "todo", from: 2, version: 3,
                                                   operations: [.replace(path: JSONPointer(tokens: [aliceID, "data"]), value: ["name": "alice", "editing": "t3"])])])
        alice.send(.presence(room: "todo", data: ["name": "alice", "editing": "t3"], id: 8))
        #expect(alice.receiveAll() == [.ack(id: 8, room: "todo", version: nil)], "the same data changes nothing")
        #expect(bob.receiveAll().isEmpty)
        #expect(alice.members(of: "todo") == bob.members(of: "todo"))
    }

    @Test func leavingOrDisconnectingRemovesTheMember() async {
        let server = Self.makeServer()
        let (alice, _) = Self.client(server), (bob, bobID) = Self.client(server), (carol, carolID) = Self.client(server)
        for client in [alice, bob, carol] { client.send(.join(room: "counter", presence: [:])) }
        alice.discardReceived()
        bob.send(.leave(room: "counter", id: 1))
        #expect(alice.receiveAll() == [.presencePatch(room: "counter", from: 3, version: 4, operations: [.remove(path: JSONPointer(tokens: [bobID]))])])
        carol.disconnect()
        #expect(alice.receiveAll() == [.presencePatch(room: "counter", from: 4, version: 5, operations: [.remove(path: JSONPointer(tokens: [carolID]))])])
        #expect(alice.members(of: "counter")?.objectValue?.count == 1)
        #expect(bob.receiveAll().last == .ack(id: 1, room: "counter", version: nil))
        bob.send(.presence(room: "counter", data: ["name": "bob"], id: 2))
        #expect(bob.receiveAll().compactMap(\.error).map(\.code) == [.invalidArgs], "a member that left can't update")
    }

    @Test func aJoinWithoutPresenceSeesNoPresenceAndIsNotListed() async {
        let server = Self.makeServer()
        let (alice, _) = Self.client(server), (watcher, _) = Self.client(server)
        alice.send(.join(room: "counter", presence: [:]))
        alice.discardReceived()
        watcher.send(.join(room: "counter", id: 1))
        #expect(watcher.receiveAll().map(\.type) == ["snapshot", "ack"], "the protocol without presence is unchanged")
        #expect(alice.receiveAll().isEmpty)
        // Rejoining without presence unlists a member.
        alice.send(.join(room: "counter", id: 2))
        #expect(alice.receiveAll().map(\.type) == ["snapshot", "ack"])
        let (bob, _) = Self.client(server)
        bob.send(.join(room: "counter", presence: [:]))
        _ = bob.receiveAll()
        #expect(bob.members(of: "counter")?.objectValue?.count == 1, "only bob is listed")
    }

    @Test func aResumeGetsAFreshPresenceSnapshot() async {
        let server = Self.makeServer()
        let (alice, _) = Self.client(server), (bob, bobID) = Self.client(server)
        alice.send(.join(room: "counter", presence: ["name": "alice"]))
        bob.send(.join(room: "counter", presence: ["name": "bob"]))
        _ = bob.receiveAll()
        guard let epoch = alice.receiveAll().compactMap({ if case .snapshot(_, let epoch, _, _) = $0 { epoch } else { nil } }).first else {
            Issue.record("no snapshot")
            return
        }
        alice.disconnect()
        bob.send(.action(room: "counter", name: "increment", id: 1))
        let (back, backID) = Self.client(server)
        back.send(.join(room: "counter", id: 2, since: ResumePoint(epoch: epoch, version: 0), presence: ["name": "alice"]))
        let got = back.receiveAll()
        #expect(got.map(\.type) == ["patch", "presence", "ack"], "the resume patch, then the whole presence")
        #expect(back.members(of: "counter") == [bobID: Self.member(bobID, ["name": "bob"]), backID: Self.member(backID, ["name": "alice"])],
                "the closed connection's member is gone; the new connection is a new member")
        #expect(bob.receiveAll().map(\.type) == ["presence_patch", "patch", "ack", "presence_patch"])
        #expect(bob.members(of: "counter") == back.members(of: "counter") && bob.gaps.isEmpty)
    }

    @Test func roomsWithoutPresenceIgnoreIt() async {
        let server = Self.makeServer()
        let (client, _) = Self.client(server)
        for (id, room) in [(1, "login"), (2, "bench:x"), (3, "tether.server")] {
            client.send(.join(room: room, id: id, presence: ["name": "kim"]))
        }
        #expect(!client.receiveAll().contains { $0.type.hasPrefix("presence") }, "per-session, opted-out and the server's own rooms keep none")
        client.send(.presence(room: "bench:x", data: ["name": "kim"], id: 4))
        #expect(client.receiveAll().compactMap(\.error).map(\.code) == [.invalidArgs])
    }

    @Test func badPresenceDataIsRefused() async {
        let server = Self.makeServer()
        let (client, _) = Self.client(server)
        client.send(text: #"{"type":"join","room":"counter","id":1,"presence":"kim"}"#)
        #expect(client.receiveAll().compactMap(\.error) == [ProtocolError(.invalidArgs, "field \"presence\" must be an object, got string", id: 1, room: "counter")])
        let big = JSON.object(["name": .string(String(repeating: "k", count: TetherProtocol.maxPresenceBytes))])
        client.send(.join(room: "counter", id: 2, presence: big))
        let refused = client.receiveAll()
        #expect(refused.map(\.type) == ["error"], "nothing joined")
        #expect(refused.first?.error?.code == .tooLarge && refused.first?.error?.message.contains("1024") == true)
        client.send(.presence(room: "counter", data: ["name": "kim"], id: 3))
        #expect(client.receiveAll().compactMap(\.error).map(\.code) == [.invalidArgs], "not joined")
        client.send(.join(room: "counter", presence: [:]))
        _ = client.receiveAll()
        client.send(text: #"{"type":"presence","room":"counter","data":[1],"id":4}"#)
        client.send(text: #"{"type":"presence","room":"counter","id":5}"#)
        client.send(.presence(room: "counter", data: big, id: 6))
        #expect(client.receiveAll().compactMap(\.error).map(\.code) == [.invalidArgs, .invalidArgs, .tooLarge])
    }

    @Test func updatesShareTheActionsTokenBucket() async {
        let server = Self.makeServer { $0.maxActionsPerSecond = 10; $0.actionBurst = 3 }
        let (client, _) = Self.client(server)
        client.send(.join(room: "counter", presence: [:]))
        _ = client.receiveAll()
        client.send(.action(room: "counter", name: "increment", id: 1))
        for id in 2...4 { client.send(.presence(room: "counter", data: ["n": .int(id)], id: id)) }
        let replies = client.receiveAll()
        #expect(replies.filter { $0.type == "ack" }.count == 3)
        #expect(replies.compactMap(\.error).map(\.code) == [.rateLimited])
    }

    @Test func aUsersConnectionsShareTheTokensSubject() async {
        let authority = TokenAuthority(secret: Array("s3cret".utf8))
        let server = Self.makeServer { $0.auth = authority }
        let token = await authority.mint(AccessClaims(subject: "kim", expires: server.clock.secondsSince1970 + 60, rooms: ["counter"]))
        let (phone, phoneID) = Self.client(server), (laptop, laptopID) = Self.client(server)
        phone.send(.join(room: "counter", token: token, presence: ["device": "phone"]))
        laptop.send(.join(room: "counter", token: token, presence: ["device": "laptop"]))
        _ = phone.receiveAll()
        _ = laptop.receiveAll()
        #expect(laptop.members(of: "counter") == [phoneID: Self.member("kim", ["device": "phone"]), laptopID: Self.member("kim", ["device": "laptop"])],
                "one member per connection, grouped by user")
    }

    @Test func aViewModelObservesPresenceAndReacts() async {
        let server = Self.makeServer()
        let (alice, _) = Self.client(server), (bob, _) = Self.client(server)
        alice.send(.join(room: "roster", presence: ["name": "alice"]))
        #expect(alice.receiveAll().map(\.type) == ["snapshot", "presence", "patch"], "the reaction is an ordinary version step")
        #expect(alice.state(of: "roster") == ["here": ["alice"], "editing": [:]])
        bob.send(.join(room: "roster", presence: ["name": "bob"]))
        bob.send(.presence(room: "roster", data: ["name": "bob", "editing": "t1"], id: 1))
        _ = bob.receiveAll()
        _ = alice.receiveAll()
        #expect(alice.state(of: "roster") == ["here": ["alice", "bob"], "editing": ["t1": "bob"]])
        bob.disconnect()
        _ = alice.receiveAll()
        #expect(alice.state(of: "roster") == ["here": ["alice"], "editing": [:]], "bob's item is released when he leaves")
        #expect(alice.gaps.isEmpty)
    }
}

/// Spectators (`join` with `watchPresence`): the presence stream without being listed.
@Suite("Presence spectators in process")
struct PresenceSpectatorTests {
    static let client = PresenceTests.client
    static let member = PresenceTests.member

    @Test func aSpectatorGetsTheStreamAndIsNeverListed() async {
        let server = PresenceTests.makeServer()
        let (alice, aliceID) = Self.client(server), (bob, bobID) = Self.client(server), (screen, _) = Self.client(server)
        alice.send(.join(room: "todo", id: 1, presence: ["name": "alice"]))
        alice.discardReceived()
        screen.send(.join(room: "todo", id: 1, watchPresence: true))
        #expect(screen.receiveAll().map(\.type) == ["snapshot", "presence", "ack"], "a member's order: presence before the ack")
        #expect(screen.members(of: "todo") == [aliceID: Self.member(aliceID, ["name": "alice"])])
        #expect(alice.receiveAll().isEmpty, "the members hear nothing of a spectator")

        bob.send(.join(room: "todo", presence: ["name": "bob"]))
        bob.send(.presence(room: "todo", data: ["name": "bob", "editing": "t1"]))
        bob.send(.leave(room: "todo"))
        #expect(screen.receiveAll().map(\.type) == ["presence_patch", "presence_patch", "presence_patch"])
        _ = alice.receiveAll()
        #expect(screen.members(of: "todo") == [aliceID: Self.member(aliceID, ["name": "alice"])])
        #expect(screen.members(of: "todo") == alice.members(of: "todo"))
        _ = bob.receiveAll()
        #expect(bob.members(of: "todo")?[bobID] != nil && screen.gaps.isEmpty, "bob was listed while there")

        screen.send(.presence(room: "todo", data: ["name": "screen"], id: 2))
        #expect(screen.receiveAll().compactMap(\.error).map(\.code) == [.invalidArgs], "a spectator has no presence to update")
        screen.send(.leave(room: "todo"))
        screen.disconnect()
        #expect(alice.receiveAll().isEmpty, "nor of one leaving")
    }

    @Test func presenceListsTheJoinWhateverWatchPresenceSays() async {
        let server = PresenceTests.makeServer()
        let (alice, aliceID) = Self.client(server)
        alice.send(.join(room: "counter", presence: ["name": "alice"], watchPresence: true))
        _ = alice.receiveAll()
        #expect(alice.members(of: "counter") == [aliceID: Self.member(aliceID, ["name": "alice"])])
    }

    @Test func aSpectatorNeitherReachesTheViewModelNorCountsAgainstTheMaximum() async {
        let server = PresenceTests.makeServer { $0.maxPresenceMembers = 1 }
        let (screen, _) = Self.client(server), (alice, aliceID) = Self.client(server), (bob, _) = Self.client(server)
        screen.send(.join(room: "roster", watchPresence: true))
        #expect(screen.receiveAll().map(\.type) == ["snapshot", "presence"], "no version step: the ViewModel saw nothing")
        #expect(screen.state(of: "roster") == ["here": [], "editing": [:]] && screen.members(of: "roster") == [:])
        alice.send(.join(room: "roster", presence: ["name": "alice"]))
        _ = alice.receiveAll()
        #expect(alice.members(of: "roster") == [aliceID: Self.member(aliceID, ["name": "alice"])], "the spectator took no place")
        #expect(alice.state(of: "roster") == ["here": ["alice"], "editing": [:]])
        bob.send(.join(room: "roster", watchPresence: true))
        #expect(bob.receiveAll().map(\.type) == ["snapshot", "presence"], "a full room still takes spectators")
        #expect(bob.members(of: "roster") == alice.members(of: "roster"))
        #expect(screen.receiveAll().map(\.type) == ["presence_patch", "patch"], "alice's arrival, and the ViewModel's reaction")
        #expect(screen.state(of: "roster") == ["here": ["alice"], "editing": [:]] && screen.gaps.isEmpty)
    }

    @Test func aMemberRejoiningAsASpectatorIsUnlistedAndKeepsTheStream() async {
        let server = PresenceTests.makeServer()
        let (alice, aliceID) = Self.client(server), (bob, bobID) = Self.client(server)
        alice.send(.join(room: "roster", presence: ["name": "alice"]))
        bob.send(.join(room: "roster", presence: ["name": "bob"]))
        _ = alice.receiveAll()
        _ = bob.receiveAll()
        bob.send(.join(room: "roster", id: 2, watchPresence: true))
        #expect(bob.receiveAll().map(\.type) == ["snapshot", "presence", "patch", "ack"])
        #expect(bob.members(of: "roster") == [aliceID: Self.member(aliceID, ["name": "alice"])])
        #expect(alice.receiveAll().map(\.type) == ["presence_patch", "patch"])
        #expect(alice.members(of: "roster") == bob.members(of: "roster"))
        #expect(alice.state(of: "roster") == ["here": ["alice"], "editing": [:]], "the ViewModel saw bob leave")
        // Back as a member, then a plain join: no stream at all.
        bob.send(.join(room: "roster", presence: ["name": "bob"]))
        _ = bob.receiveAll()
        #expect(bob.members(of: "roster")?[bobID] != nil)
        bob.send(.join(room: "roster", id: 3))
        #expect(bob.receiveAll().map(\.type) == ["snapshot", "patch", "ack"], "unlisted; the ViewModel's reaction, then the ack")
        alice.send(.presence(room: "roster", data: ["name": "alice", "editing": "t1"]))
        #expect(bob.receiveAll().map(\.type) == ["patch"], "the state's stream only")
        #expect(alice.gaps.isEmpty && bob.gaps.isEmpty)
    }

    @Test func roomsWithoutPresenceIgnoreASpectator() async {
        let server = PresenceTests.makeServer()
        let (client, _) = Self.client(server)
        for (id, room) in [(1, "login"), (2, "bench:x"), (3, "tether.server")] {
            client.send(.join(room: room, id: id, watchPresence: true))
        }
        #expect(client.receiveAll().map(\.type) == ["snapshot", "ack", "snapshot", "ack", "snapshot", "ack"], "answered as without it")
    }

    @Test func aSpectatorJoiningWithinAWindowGetsOnlyTheChangesAfterItsSnapshot() async {
        let server = PresenceTests.makeServer { $0.presenceWindow = PresenceWindowTests.window }
        let (alice, aliceID) = Self.client(server), (bob, bobID) = Self.client(server), (screen, _) = Self.client(server)
        alice.send(.join(room: "counter", presence: ["name": "alice"]))
        server.advance(by: PresenceWindowTests.window)
        alice.discardReceived()
        bob.send(.join(room: "counter", presence: ["name": "bob"]))
        screen.send(.join(room: "counter", watchPresence: true))
        #expect(screen.receiveAll().map(\.type) == ["snapshot", "presence"], "at once, with bob in it")
        #expect(screen.members(of: "counter")?.objectValue.map { Set($0.keys) } == [aliceID, bobID])
        bob.send(.presence(room: "counter", data: ["name": "bob", "editing": "t1"]))
        server.advance(by: PresenceWindowTests.window)
        let got = screen.receiveAll()
        #expect(got.count == 1 && got.first?.type == "presence_patch")
        _ = alice.receiveAll()
        #expect(screen.members(of: "counter") == alice.members(of: "counter") && screen.gaps.isEmpty)
        #expect(screen.members(of: "counter")?[bobID] == Self.member(bobID, ["name": "bob", "editing": "t1"]))
    }
}

/// Presence with a window (50 ms here; the daemon's default is 250 ms): changes gather and go out as one
/// `presence_patch` per listener when the window ends; a member arriving meanwhile is not kept
/// waiting for its own snapshot.
@Suite("Presence window in process")
struct PresenceWindowTests {
    static let window: Duration = .milliseconds(50)

    static func makeServer() -> TestServer {
        PresenceTests.makeServer { $0.presenceWindow = window }
    }

    static func types(_ messages: [ServerMessage]) -> [String] { messages.map(\.type) }

    @Test func changesWithinAWindowReachEachListenerAsOnePatch() async {
        let server = Self.makeServer()
        let (alice, aliceID) = PresenceTests.client(server), (bob, bobID) = PresenceTests.client(server)
        let (carol, carolID) = PresenceTests.client(server)
        alice.send(.join(room: "counter", id: 1, presence: ["name": "alice"]))
        #expect(Self.types(alice.receiveAll()) == ["snapshot", "presence", "ack"], "a joiner's snapshot comes at once")
        #expect(alice.members(of: "counter") == [aliceID: PresenceTests.member(aliceID, ["name": "alice"])], "with itself in it")
        server.advance(by: Self.window)
        #expect(alice.receiveAll().isEmpty, "nobody else to tell")

        bob.send(.join(room: "counter", presence: ["name": "bob"]))
        bob.send(.presence(room: "counter", data: ["name": "bob", "editing": "t1"], id: 2))
        carol.send(.join(room: "counter", presence: ["name": "carol"]))
        carol.send(.leave(room: "counter"))
        #expect(alice.receiveAll().isEmpty, "nothing before the window ends")
        let bobGot = bob.receiveAll()
        #expect(Self.types(bobGot) == ["snapshot", "presence", "ack"], "the update's ack does not wait for the window")
        #expect(bob.members(of: "counter")?[bobID] == PresenceTests.member(bobID, ["name": "bob"]))

        server.advance(by: Self.window)
        let aliceGot = alice.receiveAll()
        // Each join made a version step (its snapshot holds the changes before it); alice holds
        // none of them and gets all three in one frame.
        #expect(aliceGot == [.presencePatch(room: "counter", from: 1, version: 4, operations: [
            .add(path: JSONPointer(tokens: [bobID]), value: PresenceTests.member(bobID, ["name": "bob"])),
            .replace(path: JSONPointer(tokens: [bobID, "data"]), value: ["name": "bob", "editing": "t1"]),
            .add(path: JSONPointer(tokens: [carolID]), value: PresenceTests.member(carolID, ["name": "carol"])),
            .remove(path: JSONPointer(tokens: [carolID])),
        ])], "one frame for the window")
        #expect(Self.types(bob.receiveAll()) == ["presence_patch"], "bob gets the steps after his snapshot, in one frame")
        #expect(!(alice.members(of: "counter")?.objectValue?.keys.contains(carolID) ?? true))
        let expected: JSON = [aliceID: PresenceTests.member(aliceID, ["name": "alice"]), bobID: PresenceTests.member(bobID, ["name": "bob", "editing": "t1"])]
        #expect(alice.members(of: "counter") == expected && bob.members(of: "counter") == expected)
        #expect(alice.gaps.isEmpty && bob.gaps.isEmpty)
        server.advance(by: Self.window * 4)
        #expect(alice.receiveAll().isEmpty && bob.receiveAll().isEmpty, "a window with no change sends nothing")
    }

    /// The invariant: whatever members do, and whenever the windows end, every listener's mirror
    /// applies each frame without a gap and ends equal to every other's, with no more than one
    /// frame per window.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func randomChurnKeepsEveryMirrorExact(seed: UInt64) async {
        var rng = SeededGenerator(seed: seed)
        let server = Self.makeServer()
        // Each client, its member id, its presence data while it is listed, and whether it gets
        // the stream (listed, or a spectator).
        var clients: [(client: TestClient, id: String, data: JSON?, listening: Bool)] = (0..<8).map { _ in
            let (client, id) = PresenceTests.client(server)
            return (client, id, nil, false)
        }
        var windows = 0
        for _ in 0..<200 {
            let index = Int.random(in: 0..<clients.count, using: &rng)
            let data: JSON = ["n": .int(Int.random(in: 0..<3, using: &rng))]
            switch Int.random(in: 0..<11, using: &rng) {
            case 0...3:
                clients[index].client.send(.join(room: "todo", presence: data))
                clients[index].data = data
                clients[index].listening = true
            case 4...5 where clients[index].data != nil:
                clients[index].client.send(.presence(room: "todo", data: data))
                clients[index].data = data
            case 6:
                clients[index].client.send(.leave(room: "todo"))
                clients[index].data = nil
                clients[index].listening = false
            case 7:
                clients[index].client.disconnect()
                let (client, id) = PresenceTests.client(server)
                clients[index] = (client, id, nil, false)
            case 8:
                clients[index].client.send(.join(room: "todo", watchPresence: true))
                clients[index].data = nil
                clients[index].listening = true
            default:
                server.advance(by: Self.window)
                windows += 1
            }
        }
        server.advance(by: Self.window)
        windows += 1
        let listed = clients.compactMap { entry in entry.data.map { (entry.id, PresenceTests.member(entry.id, $0)) } }
        let expected = JSON.object(Dictionary(uniqueKeysWithValues: listed))
        for entry in clients where entry.listening {
            let got = entry.client.receiveAll()
            #expect(entry.client.gaps.isEmpty, "seed \(seed): \(entry.client.gaps)")
            #expect(entry.client.members(of: "todo") == expected, "seed \(seed)")
            #expect(got.filter { $0.type == "presence_patch" }.count <= windows, "seed \(seed): at most a frame per window")
        }
    }
}
