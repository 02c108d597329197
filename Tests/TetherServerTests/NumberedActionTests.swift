import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
@testable import TetherServer
import TetherTestSupport
import TetherTesting

/// Numbered actions (`seq` after a `hello` with a client id): each number runs once per room and
/// client; a repeat, on the same connection or after a reconnect or a restart, gets the first
/// outcome without running again.
@Suite("Numbered actions run once")
struct NumberedActionTests {
    static let client = "client-0123456789abcdef"
    static let authority = TokenAuthority(secret: Array("s3cret".utf8))

    /// A connection that said hello as `client` and joined `room` (with a token for `subject`).
    static func connected(_ server: TestServer, as client: String = client, room: String = "counter", subject: String? = nil) async -> TestClient {
        let connection = server.connect()
        connection.send(.hello(client: client))
        var token: String?
        if let subject { token = await authority.mint(AccessClaims(subject: subject, expires: server.clock.secondsSince1970 + 600, rooms: ["*"])) }
        connection.send(.join(room: room, id: 1, token: token))
        connection.discardReceived()
        return connection
    }

    static func increment(_ connection: TestClient, id: Int, seq: Int) -> [ServerMessage] {
        connection.send(.action(room: "counter", name: "increment", args: ["by": 1], id: id, seq: seq))
        return connection.receiveAll()
    }

    @Test func aRepeatGetsTheFirstAckAndRunsNothing() async {
        let server = TestServer(kinds: Demos.kinds)
        let alice = await Self.connected(server)
        #expect(Self.increment(alice, id: 2, seq: 1).map(\.type) == ["patch", "ack"])
        _ = Self.increment(alice, id: 3, seq: 2)

        let repeated = Self.increment(alice, id: 4, seq: 1)
        #expect(repeated == [.ack(id: 4, room: "counter", version: 1)], "the first outcome, under the repeat's id, and no patch")
        #expect(alice.state(of: "counter") == ["count": 2])
    }

    @Test func aRepeatAfterAReconnectIsAnsweredFromTheRecord() async {
        let server = TestServer(kinds: Demos.kinds)
        let first = await Self.connected(server)
        first.send(.action(room: "counter", name: "increment", args: ["by": 5], id: 2, seq: 7))
        first.disconnect()  // the ack may have been lost with the connection

        let again = await Self.connected(server)
        again.send(.action(room: "counter", name: "increment", args: ["by": 5], id: 2, seq: 7))
        #expect(again.receiveAll() == [.ack(id: 2, room: "counter", version: 1)])
        #expect(again.state(of: "counter") == ["count": 5])
        // Another client's number 7 is its own.
        let bob = await Self.connected(server, as: "client-bob-0123456789")
        #expect(Self.increment(bob, id: 2, seq: 7).map(\.type) == ["patch", "ack"])
    }

    @Test func aFailedActionIsAnsweredWithItsFirstErrorWithoutRunningAgain() async {
        let server = TestServer(kinds: Demos.kinds)
        let alice = await Self.connected(server)
        alice.send(.action(room: "counter", name: "increment", args: ["by": "two"], id: 2, seq: 1))
        let first = alice.receiveAll()
        alice.send(.action(room: "counter", name: "increment", args: ["by": 2], id: 3, seq: 1))
        let repeated = alice.receiveAll()
        #expect(first.first?.error?.code == .invalidArgs && repeated.first?.error?.code == .invalidArgs, "\(first) \(repeated)")
        #expect(repeated.first?.error?.id == 3 && repeated.first?.error?.applied == ProtocolError.Applied.no)
        #expect(alice.state(of: "counter") == ["count": 0], "the repeat's own arguments were not run")
    }

    @Test func aNumberOlderThanTheRoomRemembersIsRefusedAsStale() async {
        let server = TestServer(kinds: Demos.kinds)
        let alice = await Self.connected(server)
        for seq in 1...(ActionOutcomes.perClient + 1) { _ = Self.increment(alice, id: seq + 1, seq: seq) }
        let stale = Self.increment(alice, id: 999, seq: 1)
        #expect(stale.count == 1 && stale.first?.error?.code == .staleAction, "\(stale)")
        #expect(stale.first?.error?.applied == ProtocolError.Applied.unknown)
        #expect(alice.state(of: "counter") == ["count": .int(ActionOutcomes.perClient + 1)])
        // The newest ones are still answered.
        #expect(Self.increment(alice, id: 1000, seq: 2) == [.ack(id: 1000, room: "counter", version: 2)])
    }

    /// A number the room has no outcome for, above those it let go of, never ran: a send refused
    /// before running (rate_limited, unavailable) whose resend comes after later numbers ran.
    @Test func aNumberThatNeverRanRunsWhenItComesAfterLaterOnes() async {
        let server = TestServer(kinds: Demos.kinds)
        let alice = await Self.connected(server)
        #expect(Self.increment(alice, id: 2, seq: 2).map(\.type) == ["patch", "ack"])
        #expect(Self.increment(alice, id: 3, seq: 1).map(\.type) == ["patch", "ack"], "number 1 never ran here: it runs")
        #expect(Self.increment(alice, id: 4, seq: 1) == [.ack(id: 4, room: "counter", version: 2)], "and once")
        #expect(alice.state(of: "counter") == ["count": 2])
    }

    /// A full record lets go of its lowest number, not its first recorded: after 4...64, 1, 2, 65
    /// and 66 ran, number 1 is let go of, 4 is remembered, and 3 (refused, sent again) still runs.
    @Test func theRecordLetsGoOfItsLowestNumber() async {
        var outcomes = ActionOutcomes()
        let order = Array(4...64) + [1, 2, 65, 66]
        for (index, seq) in order.enumerated() { outcomes.record(ActionNumber(client: "c", seq: seq), .applied(version: index + 1)) }
        guard case .new = outcomes.lookup(ActionNumber(client: "c", seq: 3)) else {
            Issue.record("number 3 never ran: \(outcomes.lookup(ActionNumber(client: "c", seq: 3)))")
            return
        }
        guard case .forgotten = outcomes.lookup(ActionNumber(client: "c", seq: 1)) else {
            Issue.record("number 1, the lowest, ran and was let go of: it is forgotten, not run again")
            return
        }
        guard case .repeated(.applied(let version)) = outcomes.lookup(ActionNumber(client: "c", seq: 4)) else {
            Issue.record("number 4 is among the highest 64")
            return
        }
        #expect(version == 1)
    }

    @Test func aNumberedActionNeedsAHelloFirst() async {
        let server = TestServer(kinds: Demos.kinds)
        let anonymous = server.connect()
        anonymous.discardReceived()
        anonymous.send(.action(room: "counter", name: "increment", id: 1, seq: 1))
        let answer = anonymous.receiveAll()
        #expect(answer.first?.error?.code == .badMessage && answer.first?.error?.applied == ProtocolError.Applied.no, "\(answer)")
    }

    @Test func withTokensAGuessedClientIDAnswersNothingOfAnotherSubject() async {
        var configuration = TestServer.defaultConfiguration
        configuration.auth = Self.authority
        let server = TestServer(configuration: configuration, kinds: Demos.kinds)
        let alice = await Self.connected(server, subject: "alice")
        #expect(Self.increment(alice, id: 2, seq: 1).map(\.type) == ["patch", "ack"])
        // Mallory knows alice's client id and sends her number: it is Mallory's own first action.
        let mallory = await Self.connected(server, subject: "mallory")
        #expect(Self.increment(mallory, id: 2, seq: 1).map(\.type) == ["patch", "ack"])
        #expect(mallory.state(of: "counter") == ["count": 2])
        // And alice's record is untouched: her repeat still gets her own ack.
        #expect(Self.increment(alice, id: 3, seq: 1).last == .ack(id: 3, room: "counter", version: 1))
    }

    @Test func aRestartedServerAnswersTheNumbersItStored() async throws {
        let directory = Daemon.temporaryDirectory()
        do {
            let server = try TestServer(dataDirectory: directory, kinds: Demos.kinds)
            let alice = await Self.connected(server)
            for seq in 1...3 { _ = Self.increment(alice, id: seq + 1, seq: seq) }
            server.close()
        }
        let server = try TestServer(dataDirectory: directory, kinds: Demos.kinds)
        defer { server.close() }
        let alice = await Self.connected(server)
        #expect(Self.increment(alice, id: 2, seq: 2) == [.ack(id: 2, room: "counter", version: 2)], "stored with version 2's step")
        #expect(alice.state(of: "counter") == ["count": 3])
        #expect(Self.increment(alice, id: 3, seq: 4).map(\.type) == ["patch", "ack"])
    }

    @Test func theNumberTravelsInTheActionMessage() async throws {
        let message = ClientMessage.action(room: "counter", name: "increment", args: ["by": 1], id: 2, seq: 41)
        #expect(try ClientMessage.decode(message.encoded()) == message)
        #expect(throws: ProtocolError.self) { try ClientMessage.decode(Array(#"{"type":"action","room":"counter","name":"reset","id":1,"seq":0}"#.utf8)) }
    }
}
