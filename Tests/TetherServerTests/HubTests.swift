import Testing
import TetherContract
import TetherDemoContracts
import TetherDemos
import TetherJSON
import TetherProtocol
import TetherServer
import TetherTesting

/// The server core in process: a real hub and real rooms, in-memory connections, a virtual
/// clock. Everything runs on the test's thread, so each test is deterministic and fast.
@Suite("Hub in process")
struct HubTests {
    static func makeServer(_ configure: (inout ServerConfiguration) -> Void = { _ in }) -> TestServer {
        var configuration = TestServer.defaultConfiguration
        configure(&configuration)
        return TestServer(configuration: configuration, kinds: Demos.kinds + Demos.testKinds)
    }

    /// A client past its hello.
    static func client(_ server: TestServer, from address: String = "127.0.0.1") -> TestClient {
        let client = server.connect(from: address)
        #expect(client.receive()?.type == "hello")
        return client
    }

    static func errorCode(_ client: TestClient) -> ErrorCode? {
        client.receiveAll().compactMap(\.error).last?.code
    }

    // MARK: Joins, actions, resume

    @Test func joinActAndEveryoneConverges() async {
        let server = Self.makeServer()
        let alice = Self.client(server), bob = Self.client(server)
        alice.send(.join(room: "counter", id: 1))
        bob.send(.join(room: "counter"))
        #expect(alice.receiveAll() .map(\.type) == ["snapshot", "ack"])
        alice.send(.action(room: "counter", name: "increment", args: ["by": 2], id: 2))
        let messages = alice.receiveAll()
        #expect(messages.map(\.type) == ["patch", "ack"], "the patch reaches the sender before its ack")
        #expect(messages.last == .ack(id: 2, room: "counter", version: 1))
        #expect(bob.receiveAll().map(\.type) == ["snapshot", "patch"])
        #expect(bob.state(of: "counter") == ["count": 2] && alice.state(of: "counter") == ["count": 2])
        #expect(alice.gaps.isEmpty && bob.gaps.isEmpty)
    }

    @Test func anActionWithoutJoiningGetsOnlyItsAck() async {
        let server = Self.makeServer()
        let script = Self.client(server)
        script.send(.action(room: "counter", name: "increment", id: 7))
        #expect(script.receiveAll() == [.ack(id: 7, room: "counter", version: 1)])
    }

    @Test func leaveStopsTheStreamAndIsAcked() async {
        let server = Self.makeServer()
        let alice = Self.client(server), writer = Self.client(server)
        alice.send(.join(room: "counter"))
        alice.send(.leave(room: "counter", id: 3))
        #expect(alice.receiveAll().map(\.type) == ["snapshot", "ack"])
        writer.send(.action(room: "counter", name: "increment", id: 1))
        #expect(alice.receiveAll().isEmpty, "nothing more after a leave")
        alice.send(.leave(room: "never-joined", id: 4))
        #expect(alice.receiveAll() == [.ack(id: 4, room: "never-joined", version: nil)])
    }

    @Test func resumeGetsPatchesWhileTheHistoryHoldsThemElseASnapshot() async throws {
        let server = Self.makeServer { $0.historyMaxPatches = 5 }
        let alice = Self.client(server), writer = Self.client(server)
        alice.send(.join(room: "counter"))
        _ = alice.receiveAll()
        let epoch = try #require(alice.mirrors["counter"]?.epoch)
        for id in 1...3 { writer.send(.action(room: "counter", name: "increment", id: id)) }

        let back = Self.client(server)
        back.send(.join(room: "counter", id: 9, since: ResumePoint(epoch: epoch, version: 1)))
        let resumed = back.receiveAll()
        #expect(resumed.map(\.type) == ["patch", "ack"], "the two missing versions leave merged in one frame")
        if case .patch(_, _, let from, let version, let operations) = resumed[0] {
            #expect(from == 1 && version == 3 && operations.count == 2)
        } else {
            Issue.record("no patch")
        }
        #expect(resumed.last == .ack(id: 9, room: "counter", version: 3))

        // At the newest version: an empty patch confirms the resume.
        let current = Self.client(server)
        current.send(.join(room: "counter", since: ResumePoint(epoch: epoch, version: 3)))
        #expect(current.receiveAll() == [.patch(room: "counter", epoch: epoch, from: 3, version: 3, operations: [])])

        // Trimmed history or another epoch: a snapshot.
        for id in 10...19 { writer.send(.action(room: "counter", name: "increment", id: id)) }
        let late = Self.client(server)
        late.send(.join(room: "counter", since: ResumePoint(epoch: epoch, version: 1)))
        late.send(.join(room: "todo", since: ResumePoint(epoch: "other", version: 1)))
        #expect(late.receiveAll().map(\.type) == ["snapshot", "snapshot"])
        #expect(late.state(of: "counter") == ["count": 13])
    }

    @Test func perSessionRoomsArePrivateAndCountedOnce() async {
        let server = Self.makeServer { $0.maxRooms = 3 }
        let alice = Self.client(server), bob = Self.client(server)
        alice.send(.join(room: "login"))
        bob.send(.join(room: "login"))
        alice.send(.action(room: "login", name: "setEmail", args: ["value": "a@b.c"], id: 1))
        _ = alice.receiveAll()
        _ = bob.receiveAll()
        #expect(alice.state(of: "login")?["email"] == "a@b.c")
        #expect(bob.state(of: "login")?["email"] == "", "bob has his own instance")
        #expect(server.roomCount == 2)
        // Leaving and joining again keeps the instance; it is counted once.
        alice.send(.leave(room: "login"))
        alice.send(.join(room: "login"))
        _ = alice.receiveAll()
        #expect(alice.state(of: "login")?["email"] == "a@b.c")
        #expect(server.roomCount == 2)
        // Closing drops the session's instances.
        alice.disconnect()
        #expect(server.roomCount == 1)
        bob.disconnect()
        #expect(server.roomCount == 0)
        // The bound holds across sessions: three rooms at most.
        let carol = Self.client(server)
        for room in ["login", "counter", "todo"] { carol.send(.join(room: room)) }
        carol.send(.join(room: "todo:more", id: 5))
        #expect(Self.errorCode(carol) == .rateLimited)
        #expect(server.roomCount == 3)
    }

    @Test func describeAnswersFromTheActionTables() async throws {
        let server = Self.makeServer()
        let client = Self.client(server)
        client.send(.describe(kind: "counter", id: 1))
        guard case .description(let id, let kinds)? = client.receive() else { Issue.record("no description"); return }
        #expect(id == 1)
        // The counter implements a contract: its schema and fingerprint come with its actions.
        let schema = ContractSchema(CounterContract.self)
        #expect(kinds == [KindDescription(name: "counter", scope: "shared", actions: [
            .init(name: "decrement", arguments: []),
            .init(name: "increment", arguments: [.init(name: "by", shape: .integer, isOptional: true)]),
            .init(name: "reset", arguments: []),
        ], schema: schema.document, fingerprint: schema.fingerprint)])
        client.send(.describe(id: 2))
        guard case .description(_, let all)? = client.receive() else { Issue.record("no description"); return }
        #expect(all.map(\.name) == ((Demos.kinds + Demos.testKinds).map(\.name) + ["tether.server"]).sorted(), "the server's own room too")
        client.send(.describe(kind: "nope", id: 3))
        #expect(client.receive()?.error?.id == 3)
    }

    // MARK: Every error code

    @Test func everyErrorCodeNamesTheRequestAndTheBystanderNeverNotices() async throws {
        let server = Self.makeServer()
        let bystander = Self.client(server)
        bystander.send(.join(room: "counter"))
        let client = Self.client(server)
        let cases: [(String, ErrorCode)] = [
            ("not json", .badMessage),
            (#"{"room":"counter"}"#, .badMessage),
            (#"{"type":"teleport"}"#, .badMessage),
            (#"{"type":"join","room":"nowhere","id":1}"#, .unknownRoom),
            (#"{"type":"join","room":"todo:","id":2}"#, .unknownRoom),
            (#"{"type":"action","room":"counter","name":"explode","id":3}"#, .unknownAction),
            (#"{"type":"action","room":"counter","name":"increment","args":{"by":"two"},"id":4}"#, .invalidArgs),
            (#"{"type":"action","room":"counter","name":"increment","args":{"bogus":1},"id":5}"#, .invalidArgs),
            (#"{"type":"action","room":"counter","name":"reset","args":{"x":1},"id":6}"#, .invalidArgs),
            (#"{"type":"action","room":"faulty","name":"fail","id":7}"#, .internal),
        ]
        for (text, code) in cases {
            client.send(text: text)
            let error = client.receiveAll().compactMap(\.error).first
            #expect(error?.code == code, "\(text)")
            #expect(error?.message.isEmpty == false)
            #expect(error?.applied == .no, "\(text): the error says nothing was applied")
        }
        client.sendBinary()
        #expect(Self.errorCode(client) == .badMessage)
        client.send(.action(room: "counter", name: "increment", id: 8))
        #expect(client.receiveAll() == [.ack(id: 8, room: "counter", version: 1)], "still served after errors")
        #expect(bystander.receiveAll().map(\.type) == ["snapshot", "patch"])
        #expect(bystander.gaps.isEmpty)
    }

    /// Without tokens, a client's hello says who it is: two connections with one `user` are one
    /// voter, whatever their connections; a hello comes first, once, with well-formed ids.
    @Test func aClientsHelloSaysWhoItIs() async {
        let server = Self.makeServer()
        let first = Self.client(server), second = Self.client(server), stranger = Self.client(server)
        for client in [first, second] {
            client.send(text: #"{"type":"hello","client":"\#(ClientMessage.makeClientID())","user":"kim-0123456789abcdef"}"#)
            client.send(text: #"{"type":"hello","client":"AAAAAAAAAAAAAAAAAAAAAA"}"#)
            #expect(Self.errorCode(client) == .badMessage, "a second hello saying something else")
        }
        first.send(.action(room: "vote:hello", name: "vote", args: ["option": "pizza"], id: 1))
        second.send(.action(room: "vote:hello", name: "vote", args: ["option": "salad"], id: 1))
        stranger.send(.action(room: "vote:hello", name: "vote", args: ["option": "salad"], id: 1))
        stranger.send(.join(room: "vote:hello"))
        _ = first.receiveAll() + second.receiveAll()
        #expect(stranger.receiveAll().last.map { _ in stranger.state(of: "vote:hello")?["totals"] } == ["pizza": 0, "noodles": 0, "salad": 2],
                "kim changed their vote; the stranger's connection is someone else")

        stranger.send(text: #"{"type":"hello","client":"late-0123456789abcdef"}"#)
        #expect(Self.errorCode(stranger) == .badMessage, "a hello after a join")
        let malformed = Self.client(server)
        malformed.send(text: #"{"type":"hello","client":"short"}"#)
        #expect(Self.errorCode(malformed) == .badMessage)
    }

    @Test func aFailedActionIsTakenBackAndSaysSo() async {
        let server = Self.makeServer()
        let watcher = Self.client(server), client = Self.client(server)
        watcher.send(.join(room: "faulty"))
        #expect(watcher.receiveAll().map(\.type) == ["snapshot"])
        client.send(text: #"{"type":"action","room":"faulty","name":"changeThenFail","id":1}"#)
        let replies = client.receiveAll()
        #expect(replies.count == 1)
        #expect(replies.first?.error?.code == .internal && replies.first?.error?.applied == .no)
        #expect(watcher.receiveAll().isEmpty, "no patch: the change made before the throw is taken back")
        #expect(watcher.state(of: "faulty") == ["changes": 0])
        client.send(text: #"{"type":"join","room":"faulty","id":2}"#)
        _ = client.receiveAll()
        #expect(client.state(of: "faulty") == ["changes": 0], "a fresh snapshot agrees")
    }

    @Test func aTurnPastTheStateLimitIsTooLargeAndChangesNothing() async {
        let server = Self.makeServer { $0.maxStateBytes = 2_000 }
        let writer = Self.client(server), watcher = Self.client(server)
        watcher.send(.join(room: "bench:limit"))
        writer.send(.action(room: "bench:limit", name: "set", args: ["key": "a", "value": .string(String(repeating: "x", count: 500))], id: 1))
        writer.send(.action(room: "bench:limit", name: "set", args: ["key": "b", "value": .string(String(repeating: "y", count: 3_000))], id: 2))
        let replies = writer.receiveAll()
        #expect(replies.first == .ack(id: 1, room: "bench:limit", version: 1))
        #expect(replies.last?.error?.code == .tooLarge)
        _ = watcher.receiveAll()
        #expect(watcher.version(of: "bench:limit") == 1, "no version for the refused turn")
        #expect(watcher.state(of: "bench:limit")?["fields"]?["b"] == nil)
    }

    @Test func aClientSendingOnlyGarbageIsClosedWith1008() async {
        let server = Self.makeServer { $0.maxConsecutiveErrors = 5 }
        let client = Self.client(server)
        for _ in 0..<4 { client.send(text: "garbage") }
        #expect(client.connection.isOpen)
        client.send(text: "garbage")
        #expect(client.connection.closeCode == 1008)
        #expect(server.connectionCount == 0)
    }

    // MARK: Limits

    @Test func actionsArePacedByATokenBucketOnTheVirtualClock() async {
        let server = Self.makeServer { $0.maxActionsPerSecond = 10; $0.actionBurst = 3 }
        let client = Self.client(server)
        for id in 1...5 { client.send(.action(room: "counter", name: "increment", id: id)) }
        let replies = client.receiveAll()
        #expect(replies.filter { $0.type == "ack" }.count == 3)
        #expect(replies.compactMap(\.error).map(\.code) == [.rateLimited, .rateLimited])
        server.advance(by: .milliseconds(200))  // two tokens at 10 per second
        for id in 6...8 { client.send(.action(room: "counter", name: "increment", id: id)) }
        #expect(client.receiveAll().filter { $0.type == "ack" }.count == 2)
        #expect(client.connection.isOpen, "refusals by a limit don't count as invalid requests")
    }

    @Test func roomsPerConnectionAndConnectionsPerAddressAreBounded() async {
        let server = Self.makeServer { $0.maxRoomsPerConnection = 2; $0.maxConnectionsPerIP = 2 }
        let client = Self.client(server)
        client.send(.join(room: "counter"))
        client.send(.join(room: "todo"))
        client.send(.join(room: "clock", id: 1))
        #expect(Self.errorCode(client) == .rateLimited)
        client.send(.join(room: "counter", id: 2))  // rejoining one it holds is fine
        #expect(client.receiveAll().last == .ack(id: 2, room: "counter", version: 0))

        _ = Self.client(server, from: "10.0.0.1")
        let second = server.connect(from: "10.0.0.1")
        #expect(second.receive()?.type == "hello")
        let third = server.connect(from: "10.0.0.1")
        #expect(third.connection.closeCode == 1008)
        #expect(Self.client(server, from: "10.0.0.2").connection.isOpen, "other addresses are unaffected")
    }

    // MARK: Auth

    @Test func tokensCoverRoomsAndExpireOnTheVirtualClock() async {
        let authority = TokenAuthority(secret: Array("s3cret".utf8))
        let server = Self.makeServer { $0.auth = authority }
        let start = server.clock.secondsSince1970
        let token = await authority.mint(AccessClaims(subject: "alice", expires: start + 60, rooms: ["todo:*", "counter"]))
        let client = Self.client(server)
        client.send(.join(room: "counter", id: 1))
        #expect(Self.errorCode(client) == .unauthorized)
        client.send(.join(room: "clock", id: 2, token: token))
        #expect(Self.errorCode(client) == .unauthorized, "not covered")
        client.send(.join(room: "counter", id: 3, token: "x.y.z"))
        #expect(Self.errorCode(client) == .unauthorized, "malformed")
        client.send(.join(room: "counter", id: 4, token: await TokenAuthority(secret: Array("other".utf8)).mint(AccessClaims(subject: "eve", expires: start + 60, rooms: ["*"]))))
        #expect(Self.errorCode(client) == .unauthorized, "another secret")
        client.send(.action(room: "todo:a", name: "add", args: ["title": "x"], id: 5))
        #expect(Self.errorCode(client) == .unauthorized, "actions need a join with a token")

        client.send(.join(room: "counter", id: 6, token: token))
        client.send(.action(room: "counter", name: "increment", id: 7))
        #expect(client.receiveAll().last == .ack(id: 7, room: "counter", version: 1))

        server.advance(by: .seconds(91))  // past exp and the 30 s leeway
        client.send(.action(room: "counter", name: "increment", id: 8))
        let expired = client.receiveAll().compactMap(\.error).last
        #expect(expired?.code == .unauthorized && expired?.message.contains("expired") == true)
        client.send(.join(room: "counter", id: 9, token: token))
        #expect(Self.errorCode(client) == .unauthorized, "an expired token joins nothing")
    }

    // MARK: Slow and stuck clients

    @Test func aSlowClientGetsASnapshotInsteadOfAnEndlessQueue() async throws {
        let server = Self.makeServer { $0.sendQueueBytes = 4_096 }
        let slow = Self.client(server), fast = Self.client(server), writer = Self.client(server)
        slow.send(.join(room: "bench:slow"))
        fast.send(.join(room: "bench:slow"))
        _ = slow.receiveAll()
        slow.connection.isChoked = true
        let payload = JSON.string(String(repeating: "p", count: 500))
        for id in 1...30 { writer.send(.action(room: "bench:slow", name: "set", args: ["key": .string("k\(id)"), "value": payload], id: id)) }
        #expect(slow.receiveAll().isEmpty, "a choked connection takes nothing")
        #expect(fast.receiveAll().count == 31, "the others are not slowed")

        slow.connection.isChoked = false
        server.run()
        let caughtUp = slow.receiveAll()
        #expect(caughtUp.contains { $0.type == "snapshot" }, "the overflow was replaced by a snapshot")
        #expect(slow.version(of: "bench:slow") == 30)
        #expect(slow.state(of: "bench:slow") == fast.state(of: "bench:slow"))
        #expect(slow.gaps.isEmpty)
    }

    @Test func aClientWhoseQueueMakesNoProgressIsClosedAfterTheTimeout() async {
        let server = Self.makeServer { $0.stuckClientTimeout = .seconds(30) }
        let stuck = Self.client(server), writer = Self.client(server)
        stuck.send(.join(room: "counter"))
        _ = stuck.receiveAll()
        stuck.connection.isChoked = true
        writer.send(.action(room: "counter", name: "increment", id: 1))
        server.advance(by: .seconds(29))
        #expect(stuck.connection.isOpen)
        server.advance(by: .seconds(3))
        #expect(stuck.connection.closeCode == 1008)
        #expect(writer.connection.isOpen)
    }

    // MARK: Rooms over time

    @Test func idleRoomsLeaveMemoryAndComeBackWithANewEpoch() async throws {
        let server = Self.makeServer { $0.idleRoomTimeout = .seconds(60) }
        let client = Self.client(server)
        client.send(.join(room: "counter:idle"))
        client.send(.action(room: "counter:idle", name: "increment", id: 1))
        _ = client.receiveAll()
        let epoch = try #require(client.mirrors["counter:idle"]?.epoch)
        client.send(.leave(room: "counter:idle"))
        server.advance(by: .seconds(30))
        #expect(server.roomCount == 1)
        server.advance(by: .seconds(31))
        #expect(server.roomCount == 0, "dropped 60 s after the last subscriber left")
        client.send(.join(room: "counter:idle", since: ResumePoint(epoch: epoch, version: 1)))
        _ = client.receiveAll()
        #expect(client.mirrors["counter:idle"]?.epoch != epoch, "memory only: a new epoch")
        #expect(client.state(of: "counter:idle") == ["count": 0])
    }

    @Test func roomTimersTickOnTheVirtualClock() async {
        let server = Self.makeServer()
        let client = Self.client(server)
        client.send(.join(room: "clock"))
        _ = client.receiveAll()
        server.advance(by: .seconds(3))
        // The clock room shows the real time of day, so a tick changes the state only when the
        // second changed; what matters here is that ticks ran and the stream stays gapless.
        _ = client.receiveAll()
        #expect(client.gaps.isEmpty)
        #expect(server.clock.activeTimerCount >= 2, "the hub's housekeeping and the clock room's timer")
    }
}
