import Testing
import TetherJSON
import TetherProtocol
import TetherTransport
@testable import TetherServer

/// The exchange as a table: server messages in, the one answer out.
@Suite("HTTP API: one request as a short protocol session")
struct APIExchangeTests {
    static func body(_ response: HTTPResponse?) -> JSON? {
        response.flatMap { try? JSONParser().parse($0.body) }
    }

    @Test func anActionSaysHelloWhenNumberedJoinsThenActsAndAnswersItsAck() throws {
        var exchange = APIExchange(.act(room: "counter", action: "increment", args: ["by": 2], idempotency: .numbered(client: "payments", seq: 7)),
                                   token: "T")
        let opening = exchange.opening
        #expect(opening.count == 3)
        guard case .hello(let client, nil) = opening[0] else { Issue.record("\(opening[0])"); return }
        #expect(client.hasPrefix("http-") && client.count == 37, "a valid protocol client id: \(client)")
        #expect(opening[1] == .join(room: "counter", id: 1, token: "T"))
        #expect(opening[2] == .action(room: "counter", name: "increment", args: ["by": 2], id: 2, seq: 7))
        // The join's snapshot and ack decide nothing; the action's ack does, once.
        #expect(exchange.received(["type": "hello", "protocol": 1]) == nil)
        #expect(exchange.received(["type": "snapshot", "room": "counter", "epoch": "e", "version": 3, "state": [:]]) == nil)
        #expect(exchange.received(["type": "ack", "id": 1, "room": "counter", "version": 3]) == nil)
        let answer = exchange.received(["type": "ack", "id": 2, "room": "counter", "version": 4])
        #expect(answer?.status == 200)
        #expect(Self.body(answer) == ["room": "counter", "action": "increment", "version": 4])
        #expect(exchange.received(["type": "error", "code": "internal", "message": "late"]) == nil, "answered once")
        #expect(exchange.timedOut(after: 10) == nil)
    }

    @Test(arguments: [
        ("unknown_action", false as JSON, 404), ("invalid_args", false, 422), ("unauthorized", false, 403),
        ("rate_limited", false, 429), ("unavailable", "unknown", 503), ("stale_action", "unknown", 409), ("internal", false, 500),
    ] as [(String, JSON, Int)])
    func anErrorIsAnsweredWithItsStatusAndTheProtocolsShape(_ code: String, _ applied: JSON, _ status: Int) {
        var exchange = APIExchange(.act(room: "r", action: "a", args: nil, idempotency: nil), token: nil)
        let answer = exchange.received(["type": "error", "id": 2, "code": .string(code), "message": "why", "room": "r", "applied": applied])
        #expect(answer?.status == status)
        #expect(Self.body(answer) == ["code": .string(code), "message": "why", "room": "r", "applied": applied])
    }

    /// A deletion while an action waits ends the joined stream, not the action: its own answer follows.
    @Test func aDeletionDuringAnActionWaitsForTheActionsAnswer() {
        var act = APIExchange(.act(room: "r", action: "a", args: nil, idempotency: nil), token: nil)
        #expect(act.received(["type": "error", "code": "room_deleted", "message": "gone", "room": "r", "applied": false]) == nil)
        #expect(act.received(["type": "ack", "id": 2, "room": "r", "version": 1])?.status == 200)
        var read = APIExchange(.read(room: "r", kind: "r", ifNoneMatch: nil), token: nil)
        #expect(read.received(["type": "error", "code": "room_deleted", "message": "gone", "room": "r", "applied": false])?.status == 404)
    }

    @Test func aReadAnswersTheSnapshotWithItsETagOr304() {
        var read = APIExchange(.read(room: "counter", kind: "counter", ifNoneMatch: nil), token: nil)
        #expect(read.opening == [.join(room: "counter", id: 1)])
        let answer = read.received(["type": "snapshot", "room": "counter", "epoch": "k3", "version": 9, "state": ["count": 4]])
        #expect(answer?.status == 200 && answer?.headers["ETag"] == "\"k3.9\"")
        #expect(Self.body(answer) == ["room": "counter", "kind": "counter", "epoch": "k3", "version": 9, "state": ["count": 4]])

        var again = APIExchange(.read(room: "counter", kind: "counter", ifNoneMatch: "\"old.1\", W/\"k3.9\""), token: nil)
        let unchanged = again.received(["type": "snapshot", "room": "counter", "epoch": "k3", "version": 9, "state": ["count": 4]])
        #expect(unchanged?.status == 304 && unchanged?.body == [])
        var changed = APIExchange(.read(room: "counter", kind: "counter", ifNoneMatch: "\"k3.8\""), token: nil)
        #expect(changed.received(["type": "snapshot", "room": "counter", "epoch": "k3", "version": 9, "state": [:]])?.status == 200)
    }

    @Test func membersAreListedInOrder() {
        var exchange = APIExchange(.members(room: "vote"), token: nil)
        #expect(exchange.opening == [.join(room: "vote", id: 1, watchPresence: true)])
        let answer = exchange.received(["type": "presence", "room": "vote", "version": 2,
                                        "members": ["b": ["user": "bob", "data": [:]], "a": ["user": "ann", "data": ["typing": true]]]])
        #expect(Self.body(answer) == ["room": "vote", "version": 2, "members": [
            ["id": "a", "user": "ann", "data": ["typing": true]], ["id": "b", "user": "bob", "data": [:]],
        ]])
    }

    @Test func noAnswerInTimeIs504AndAnActionsOutcomeIsUnknown() {
        var act = APIExchange(.act(room: "r", action: "a", args: nil, idempotency: .key("k")), token: nil)
        let answer = act.timedOut(after: 10)
        #expect(answer?.status == 504)
        #expect(Self.body(answer)?["applied"] == "unknown" && Self.body(answer)?["code"] == "unavailable")
        var read = APIExchange(.read(room: "r", kind: "r", ifNoneMatch: nil), token: nil)
        #expect(Self.body(read.timedOut(after: 10))?["applied"] == false)
    }
}
