import Testing
import TetherBinding
import TetherJSON
import TetherState
import TetherTestSupport

/// A ViewModel using every kind of published state, for the tests below.
final class Sample: ViewModel {
    struct Item: Codable, Equatable {
        var id: String
        var title: String
        var done: Bool
    }

    let count: Observable<Int>
    let items: ObservableList<Item>
    let fields: ObservableMap<String, JSON>
    let secret = Observable("")
    var ticks = 0

    init(context: ViewModelContext) {
        count = context.property("count", 0)
        items = context.list("items", [Item]())
        fields = context.map("fields", [String: JSON]())
        context.publish("secretLength", secret.map(\.count).removeDuplicates())
        context.every(.seconds(1)) { [unowned self] in self.ticks += 1; self.count.value += 100 }
    }

    struct By: Decodable { var by: Int? }
    struct Title: Decodable { var title: String }

    static let actions = ActionTable<Sample>()
        .on("increment", By.self) { model, args in model.count.value += args.by ?? 1 }
        .on("add", Title.self) { model, args in
            guard !args.title.isEmpty else { throw ActionError.invalidArgs("title must not be empty") }
            model.items.append(Item(id: "i\(model.items.count)", title: args.title, done: false))
        }
        .on("twoChanges") { model in
            model.count.value += 1
            model.fields["last"] = .int(model.count.value)
        }
}

@Suite("ViewModel API")
struct ViewModelTests {
    let kind = ViewModelKind("sample", scope: .shared, Sample.self)

    @Test func declaredStateIsTheInitialDocument() {
        let host = kind.instantiate(room: "sample:one")
        #expect(host.state == ["count": 0, "items": [], "fields": [:], "secretLength": 0])
        #expect(host.context.instance == "one")
        #expect(kind.actionNames == ["add", "increment", "twoChanges"])
        #expect(host.takeChanges().isEmpty)
    }

    @Test func eachChangeIsAnOperationAtItsObservablesPathOnly() throws {
        let host = kind.instantiate(room: "sample")
        try host.perform("increment", args: ["by": 5])
        #expect(host.takeChanges() == [.replace(path: "/count", value: 5)])

        try host.perform("add", args: ["title": "milk"])
        #expect(host.takeChanges() == [.add(path: "/items/0", value: ["id": "i0", "title": "milk", "done": false])])
    }

    @Test func oneTurnGathersAllItsChangesInOrder() throws {
        let host = kind.instantiate(room: "sample")
        try host.perform("twoChanges", args: nil)
        #expect(host.takeChanges() == [.replace(path: "/count", value: 1), .add(path: "/fields/last", value: 1)])
        try host.perform("twoChanges", args: nil)
        #expect(host.takeChanges() == [.replace(path: "/count", value: 2), .replace(path: "/fields/last", value: 2)])
    }

    @Test func replacingAListElementChangesOnlyItsChangedMembers() throws {
        let host = kind.instantiate(room: "sample")
        let model = try #require(host.model(as: Sample.self))
        model.items.append(.init(id: "a", title: "A", done: false))
        model.items.append(.init(id: "b", title: "B", done: false))
        _ = host.takeChanges()
        model.items.update(at: 1) { $0.done = true }
        #expect(host.takeChanges() == [.replace(path: "/items/1/done", value: true)])
        model.items.remove(at: 0)
        #expect(host.takeChanges() == [.remove(path: "/items/0")])
    }

    @Test func derivedPublishedValueChangesOnlyWhenItChanges() throws {
        let host = kind.instantiate(room: "sample")
        let model = try #require(host.model(as: Sample.self))
        model.secret.value = "abc"
        model.secret.value = "xyz"  // same length: no operation
        #expect(host.takeChanges() == [.replace(path: "/secretLength", value: 3)])
        #expect(host.state["secret"] == nil, "private observables never reach the document")
    }

    @Test func actionErrors() throws {
        let host = kind.instantiate(room: "sample")
        #expect(throws: ActionError.unknownAction("fly")) { try host.perform("fly", args: nil) }
        do {
            try host.perform("increment", args: ["by": "two"])
            Issue.record("wrong argument type accepted")
        } catch let error as ActionError {
            guard case .invalidArgs(let message) = error else { Issue.record("\(error)"); return }
            #expect(message.contains("args.by"), "\(message)")
        }
        #expect(throws: ActionError.self) { try host.perform("add", args: [:]) }
        #expect(throws: ActionError.invalidArgs("title must not be empty")) { try host.perform("add", args: ["title": ""]) }
        #expect(host.takeChanges().isEmpty, "failed actions changed nothing here")
    }

    @Test func timersAreDeclaredAndTheirTicksProduceChanges() throws {
        let host = kind.instantiate(room: "sample")
        #expect(host.timers.count == 1)
        #expect(host.timers[0].interval == .seconds(1))
        host.timers[0].tick()
        #expect(host.takeChanges() == [.replace(path: "/count", value: 100)])
    }

    @Test func restoreSetsWritableStateWithoutOperations() throws {
        let original = kind.instantiate(room: "sample")
        try original.perform("increment", args: ["by": 7])
        try original.perform("add", args: ["title": "x"])
        try original.perform("twoChanges", args: nil)
        let stored = original.state

        let restored = kind.instantiate(room: "sample")
        try restored.restore(from: stored)
        #expect(restored.state == stored)
        #expect(restored.takeChanges().isEmpty)
        try restored.perform("increment", args: nil)
        #expect(restored.takeChanges() == [.replace(path: "/count", value: 9)])
    }

    /// The core invariant: for any sequence of observable changes, applying the produced patch
    /// to a copy of the old document gives exactly the new document, which is also what the
    /// observables hold now.
    @Test(arguments: 0..<20)
    func producedPatchesRebuildTheDocument(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let host = kind.instantiate(room: "sample")
        let model = try #require(host.model(as: Sample.self))
        var mirror = host.state
        for turn in 0..<60 {
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                randomChange(model, using: &rng)
            }
            let operations = host.takeChanges()
            try mirror.apply(operations)
            #expect(mirror == host.state, "seed \(seed) turn \(turn)")
            #expect(host.state == host.context.freshSnapshot(), "seed \(seed) turn \(turn): document drifted from observables")
        }
    }

    /// The size estimate errs high but stays close, so a limit check rarely needs a full encode.
    @Test(arguments: 0..<10)
    func theEncodedSizeEstimateStaysCloseAndHigh(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let host = kind.instantiate(room: "sample")
        let model = try #require(host.model(as: Sample.self))
        for turn in 0..<200 {
            randomChange(model, using: &rng)
            _ = try host.finishTurn(maxEncodedSize: 1 << 30)
            let exact = host.state.encoded().count
            let estimate = host.context.documentSizeEstimate
            #expect(estimate >= exact && estimate <= exact + 16 + exact / 4, "seed \(seed) turn \(turn): \(estimate) vs \(exact)")
        }
    }

    @Test func aTurnPastTheStateLimitIsTakenBackWhole() throws {
        let host = kind.instantiate(room: "sample")
        try host.perform("add", args: ["title": "kept"])
        _ = try host.finishTurn(maxEncodedSize: 200)
        let before = host.state
        // One turn with two changes; the second pushes the state past 200 bytes.
        try host.perform("increment", args: ["by": 1])
        try host.perform("add", args: ["title": .string(String(repeating: "x", count: 150))])
        #expect(throws: ActionError.self) { _ = try host.finishTurn(maxEncodedSize: 200) }
        #expect(host.state == before, "the document is as before the turn")
        #expect(host.state == host.context.freshSnapshot(), "and so are the observables")
        #expect(try host.finishTurn(maxEncodedSize: 200).isEmpty)
        // Small turns still go through; a turn that shrinks a state already over the limit too.
        try host.perform("increment", args: nil)
        #expect(try host.finishTurn(maxEncodedSize: 200) == [.replace(path: "/count", value: 1)])
        try host.perform("add", args: ["title": .string(String(repeating: "y", count: 100))])
        _ = try host.finishTurn(maxEncodedSize: 1000)
        #expect(host.state.encoded().count > 150)
        let model = try #require(host.model(as: Sample.self))
        model.items.removeAll { _ in true }
        #expect(try host.finishTurn(maxEncodedSize: 120).count == 2)
    }

    /// Keys that need escapes count as they encode: a patch and a state that are small in
    /// characters but large in bytes are refused, and the estimate stays high.
    @Test func escapedKeysCountAsTheyEncode() throws {
        let host = kind.instantiate(room: "sample")
        let model = try #require(host.model(as: Sample.self))
        let before = host.state
        model.fields[String(repeating: "\u{1}", count: 300)] = 1
        #expect(throws: ActionError.self) { _ = try host.finishTurn(maxEncodedSize: 1_000) }
        #expect(host.state == before)
        for (index, key) in ["\"quoted\"", "back\\slash", "tab\t", "~/~1", String(repeating: "\u{1f}", count: 40)].enumerated() {
            model.fields[key] = .int(index)
            _ = try host.finishTurn(maxEncodedSize: 1 << 30)
            let exact = host.state.encoded().count
            #expect(host.context.documentSizeEstimate >= exact, "after \(key.debugDescription): estimate \(host.context.documentSizeEstimate), exact \(exact)")
        }
    }

    @Test func argumentsAreDecodedStrictlyAndDescribed() throws {
        let host = kind.instantiate(room: "sample")
        #expect(throws: ActionError.invalidArgs("unknown field args.bogus (known: by)")) { try host.perform("increment", args: ["bogus": 1]) }
        #expect(throws: ActionError.invalidArgs("unknown field args.by (twoChanges takes no arguments)")) { try host.perform("twoChanges", args: ["by": 5]) }
        #expect(host.takeChanges().isEmpty)
        #expect(kind.actions == [
            ActionDescription(name: "add", arguments: [.init(name: "title", shape: .string, isOptional: false)]),
            ActionDescription(name: "increment", arguments: [.init(name: "by", shape: .integer, isOptional: true)]),
            ActionDescription(name: "twoChanges", arguments: []),
        ])
    }

    private func randomChange(_ model: Sample, using rng: inout SeededGenerator) {
        let items = model.items
        switch Int.random(in: 0..<9, using: &rng) {
        case 0: model.count.value = Int.random(in: -5...5, using: &rng)
        case 1: items.insert(.init(id: JSON.randomString(using: &rng), title: JSON.randomString(using: &rng), done: false), at: Int.random(in: 0...items.count, using: &rng))
        case 2: if !items.isEmpty { items.remove(at: Int.random(in: 0..<items.count, using: &rng)) }
        case 3: if !items.isEmpty { items.update(at: Int.random(in: 0..<items.count, using: &rng)) { $0.done.toggle() } }
        case 4: if !items.isEmpty { items[Int.random(in: 0..<items.count, using: &rng)] = .init(id: "r", title: JSON.randomString(using: &rng), done: Bool.random(using: &rng)) }
        case 5: model.fields[JSON.randomKey(using: &rng)] = JSON.random(using: &rng, depth: 2)
        case 6: if let key = model.fields.keys.randomElement(using: &rng) { model.fields[key] = nil }
        case 7: model.secret.value = JSON.randomString(using: &rng)
        default: items.removeAll { _ in Bool.random(using: &rng) }
        }
    }
}
