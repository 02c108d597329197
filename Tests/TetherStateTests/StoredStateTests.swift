import Testing
import TetherBinding
import TetherJSON
import TetherState
import TetherTestSupport

/// A ViewModel's stored state (`context.stored`): its changes become operations of their own,
/// never part of the published patch; a refused turn takes them back with the rest; a restored
/// instance continues from them; and replaying a turn's stored operations gives the stored state.
@Suite("Stored ViewModel state")
struct StoredStateTests {
    /// Publishes how many marks there were; keeps who marked, and in which order, to itself.
    final class Tally: ViewModel {
        let total: Observable<Int>
        let marks: ObservableMap<String, Int>
        let order: ObservableList<String>
        let note: Observable<String>

        init(context: ViewModelContext) {
            total = context.property("total", 0)
            marks = context.stored.map("marks")
            order = context.stored.list("order")
            note = context.stored.property("note", "")
        }

        struct Mark: Decodable { var who: String; var fail: Bool? }
        struct Note: Decodable { var text: String }

        static let actions = ActionTable<Tally>()
            .on("mark", Mark.self) { model, args in
                model.marks[args.who] = (model.marks[args.who] ?? 0) + 1
                model.order.append(args.who)
                model.total.value += 1
                if args.fail == true { throw ActionError.invalidArgs("refused after changing everything") }
            }
            .on("unmark", Mark.self) { model, args in
                guard model.marks[args.who] != nil else { return }
                model.marks.removeValue(forKey: args.who)
                model.order.removeAll { $0 == args.who }
            }
            .on("note", Note.self) { model, args in model.note.value = args.text }
    }

    static let kind = ViewModelKind("tally", scope: .shared, Tally.self)

    /// Runs one action as a room does: the turn is taken back when it fails.
    static func turn(_ host: ViewModelHost, _ name: String, _ args: JSON, limit: Int = 1 << 20) -> (published: [PatchOperation], stored: [PatchOperation], error: ActionError?) {
        var error: ActionError?
        do {
            try host.perform(name, args: args)
        } catch let failure as ActionError {
            error = failure
            host.takeBackTurn()
        } catch {
            Issue.record("unexpected \(error)")
        }
        do {
            let published = try host.finishTurn(maxEncodedSize: limit)
            return (published, host.takeStoredChanges(), error)
        } catch let failure {
            return ([], host.takeStoredChanges(), failure)
        }
    }

    @Test func storedChangesAreOperationsOfTheirOwnAndNeverPublished() {
        let host = Self.kind.instantiate(room: "tally")
        #expect(host.storedState == ["marks": [:], "order": [], "note": ""])
        let turn = Self.turn(host, "mark", ["who": "ana"])
        #expect(turn.published == [.replace(path: "/total", value: 1)])
        #expect(turn.stored == [.add(path: "/marks/ana", value: 1), .add(path: "/order/0", value: "ana")])
        #expect(host.state == ["total": 1], "nothing stored is in the published document")
        #expect(host.storedState == ["marks": ["ana": 1], "order": ["ana"], "note": ""])
        let note = Self.turn(host, "note", ["text": "secret"])
        #expect(note.published.isEmpty && note.stored == [.replace(path: "/note", value: "secret")],
                "a turn may change only the stored state")
    }

    @Test func aRefusedTurnTakesTheStoredChangesBack() {
        let host = Self.kind.instantiate(room: "tally")
        _ = Self.turn(host, "mark", ["who": "ana"])
        let failed = Self.turn(host, "mark", ["who": "bo", "fail": true])
        #expect(failed.error == .invalidArgs("refused after changing everything"))
        #expect(failed.published.isEmpty && failed.stored.isEmpty)
        #expect(host.storedState == ["marks": ["ana": 1], "order": ["ana"], "note": ""])
        #expect(host.model(as: Tally.self)?.marks["bo"] == nil, "the observable is put back too")
    }

    @Test func theStoredStateIsHeldToTheSizeLimitOnItsOwn() {
        let host = Self.kind.instantiate(room: "tally")
        let long = String(repeating: "x", count: 200)
        let refused = Self.turn(host, "note", ["text": .string(long)], limit: 150)
        #expect(refused.error == .tooLarge("refused: its change of the stored state would exceed the server's limit of 150 bytes (--max-state-bytes); nothing changed"))
        #expect(host.storedState["note"] == "" && host.model(as: Tally.self)?.note.value == "")
    }

    @Test func aRestoredInstanceContinuesFromItsStoredState() throws {
        let host = Self.kind.instantiate(room: "tally")
        _ = Self.turn(host, "mark", ["who": "ana"])
        _ = Self.turn(host, "mark", ["who": "ana"])
        let restored = Self.kind.instantiate(room: "tally")
        try restored.restore(from: host.state, stored: host.storedState)
        #expect(restored.storedState == host.storedState)
        let next = Self.turn(restored, "mark", ["who": "ana"])
        #expect(next.stored.first == .replace(path: "/marks/ana", value: 3))
        // Restoring records nothing: the first turn after it holds only its own changes.
        #expect(next.stored.count == 2 && next.published == [.replace(path: "/total", value: 3)])
    }

    /// Property: over random turns (some refused), the stored operations applied in order to a
    /// copy of the initial stored state give the host's stored state after every turn, and the
    /// published operations never touch a stored member.
    @Test(arguments: 1...6) func replayingStoredOperationsGivesTheStoredState(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let host = Self.kind.instantiate(room: "tally")
        var mirror = host.storedState
        let people = ["ana", "bo", "cy", "dee"]
        for step in 0..<200 {
            let who = JSON.string(people.randomElement(using: &random)!)
            let turn: (published: [PatchOperation], stored: [PatchOperation], error: ActionError?)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: turn = Self.turn(host, "unmark", ["who": who])
            case 1: turn = Self.turn(host, "note", ["text": .string("n\(step)")])
            default: turn = Self.turn(host, "mark", ["who": who, "fail": .bool(Int.random(in: 0..<5, using: &random) == 0)])
            }
            try mirror.apply(turn.stored)
            #expect(mirror == host.storedState, "seed \(seed) step \(step)")
            #expect(turn.published.allSatisfy { $0.path.tokens.first == "total" }, "seed \(seed) step \(step): \(turn.published)")
        }
    }
}
