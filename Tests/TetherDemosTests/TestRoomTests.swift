import Testing
import TetherBinding
import TetherDemos
import TetherJSON
import TetherState
import TetherTesting

/// TestRoom itself: each check must fail a test that breaks it (`withKnownIssue` fails when the
/// expected issue is not recorded).
@Suite("TestRoom")
struct TestRoomTests {
    @Test func anUnassertedChangeFailsTheTest() throws {
        let room = TestRoom(Counter.self)
        try withKnownIssue {
            try room.send("increment")  // asserts nothing, changes /count
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains(#"Produced, not asserted: [{"op":"replace","path":"/count","value":1}]"#) }
        }
        #expect(room.state == ["count": 1])
    }

    @Test func aWrongValueOrAMissingOperationFailsTheTest() throws {
        let room = TestRoom(Counter.self)
        try withKnownIssue {
            try room.send("increment", produces: [.replace(path: "/count", value: 2)])
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains(#"Asserted, not produced: [{"op":"replace","path":"/count","value":2}]"#) }
        }
        try withKnownIssue {
            try room.send("reset", produces: [.replace(path: "/count", value: 0), .replace(path: "/other", value: 0)])
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("Asserted, not produced") && !$0.rawValue.contains("Produced, not asserted") }
        }
    }

    @Test func operationsInAnotherOrderFailTheTest() throws {
        let room = TestRoom(Login.self)
        try room.send("setEmail", ["value": "a@b.c"], produces: [.replace(path: "/email", value: "a@b.c")])
        try withKnownIssue {
            try room.send("setPassword", ["value": "abcdef"],
                          produces: [.replace(path: "/signInEnabled", value: true), .replace(path: "/passwordLength", value: 6)])
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("The same operations in another order.") }
        }
    }

    @Test func aWrongWholeStateFailsTheTest() throws {
        let room = TestRoom(Counter.self)
        try withKnownIssue {
            try room.send("increment", produces: [.replace(path: "/count", value: 1)], state: ["count": 2])
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains(#"the state is {"count":1}; expected {"count":2}"#) }
        }
    }

    @Test func anExpectedFailureThatDoesNotHappenFailsTheTest() {
        let room = TestRoom(Counter.self)
        withKnownIssue {
            room.send("increment", fails: .invalidArgs("no"), produces: [.replace(path: "/count", value: 1)])
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("succeeded; expected it to fail with .invalidArgs(\"no\")") }
        }
        withKnownIssue {
            room.send("increment", ["by": "x"], fails: .invalidArgs("another reason"))
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("failed with .invalidArgs(\"expected integer at args.by, got string\")") }
        }
    }

    @Test func anUnexpectedFailureIsThrown() {
        let room = TestRoom(Counter.self)
        #expect(throws: ActionError.invalidArgs("unknown field args.bogus (known: by)")) {
            try room.send("increment", ["bogus": 1], produces: [.replace(path: "/count", value: 1)])
        }
    }

    @Test func aDocumentThatDriftsFromItsObservablesFailsTheTest() throws {
        let room = TestRoom(Drifting.self)
        try withKnownIssue {
            try room.send("bump")
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("differs from a fresh encoding of the observables at /box") }
        }
    }

    @Test func aStoredStateThatDriftsFromItsObservablesFailsTheTest() throws {
        let room = TestRoom(Drifting.self)
        try withKnownIssue {
            try room.send("bumpStored")
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("the stored state {\"hidden\":{\"n\":0}} differs from its observables encoded afresh") }
        }
    }

    @Test func aMissingTimerFailsTheTest() {
        let room = TestRoom(Counter.self)
        withKnownIssue {
            room.tick(timer: 0)
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("has 0 timer(s); there is no timer 0") }
        }
    }

    @Test func restoringAndNamingTheRoom() throws {
        let room = TestRoom(Counter.self, room: "counter:a", restoring: ["count": 41])
        #expect(room.name == "counter:a")
        #expect(room.host.context.instance == "a")
        try room.send("increment", produces: [.replace(path: "/count", value: 42)])
        #expect(room.model.count.value == 42)
        #expect(room.version == 1)
    }
}

/// A ViewModel with a bug TestRoom must catch: it mutates a published (or stored) reference in
/// place, so no operation is recorded and clients (or the store) never hear of it.
final class Drifting: ViewModel {
    final class Box: Codable, @unchecked Sendable { var n = 0 }

    let box: Observable<Box>
    let hidden: Observable<Box>

    init(context: ViewModelContext) {
        box = context.property("box", Box())
        hidden = context.stored.property("hidden", Box())
    }

    static let actions = ActionTable<Drifting>()
        .on("bump") { model in model.box.value.n += 1 }
        .on("bumpStored") { model in model.hidden.value.n += 1 }
}

/// Time and chance through the context: a test fixes them as the server's history records them.
@Suite("TestRoom: context.now and context.random")
struct TurnInputsTests {
    static func roll(seed: UInt64) throws -> (operations: [PatchOperation], read: TurnRecord) {
        let room = TestRoom(Dice.self)
        room.host.setClock { 1_800_000_000_123 }
        room.host.replayTurnInputs(TurnRecord(seed: seed))
        let operations = try room.send("roll", produces: { state in
            [.add(path: try! JSONPointer(parsing: "/rolls/0"), value: state["rolls"]?.arrayValue?.first ?? .null),
             .replace(path: try! JSONPointer(parsing: "/rolledAt"), value: 1_800_000_000_123)]
        })
        return (operations, room.host.lastTurnInputs)
    }

    @Test func aTurnReadsTheClockItIsGivenAndTheSeedItIsHanded() throws {
        let first = try Self.roll(seed: 7)
        #expect(first.read == TurnRecord(milliseconds: 1_800_000_000_123, seed: 7), "what the turn read, for its step's history")
        #expect(try Self.roll(seed: 7).operations == first.operations, "the same seed, the same roll")
        let rolls = try (1...20).map { try Self.roll(seed: $0).operations[0] }
        #expect(Set(rolls.map { "\($0)" }).count > 1, "other seeds, other rolls")
        // A turn that reads neither records nothing.
        let room = TestRoom(Counter.self)
        try room.send("increment", ["by": 1], produces: [.replace(path: try JSONPointer(parsing: "/count"), value: 1)])
        #expect(room.host.lastTurnInputs == TurnRecord())
    }
}
