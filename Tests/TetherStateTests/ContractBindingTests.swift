import Testing
import TetherBinding
import TetherContract
import TetherJSON
import TetherState

/// A ViewModel implementing a hand-written contract: what it publishes, how its typed actions
/// are dispatched, and what a client that sends wrong arguments is told.
@Suite("A ViewModel implementing a contract")
struct ContractBindingTests {
    static let kind = ViewModelKind("score", scope: .shared, Score.self)
    static let ana = Viewer(id: "ana")

    @Test func theContractsMembersArePublishedWithTheirInitialValues() throws {
        let host = Self.kind.instantiate(room: "score")
        #expect(host.state == ["count": 0, "doubled": 0, "label": nil, "history": [], "totals": [:]])
        #expect(try JSONValueDecoder().decode(ScoreContract.State.self, from: host.state) == ScoreContract.State())
        #expect(host.projection(for: Self.ana) == [:], "a nil view is left out")
    }

    @Test func aTypedActionChangesThePublishedMembers() throws {
        let host = Self.kind.instantiate(room: "score")
        try host.perform("increment", args: ["by": 2], viewer: Self.ana)
        // `doubled` listens to `count` since the ViewModel's init, before publication did.
        #expect(host.takeChanges() == [
            .replace(path: "/doubled", value: 4), .replace(path: "/count", value: 2),
            .add(path: "/history/0", value: 2), .add(path: "/totals/ana", value: 2),
        ])
        try host.perform("increment", args: nil)
        #expect(host.state["count"] == 3, "by is optional")
        try host.perform("setLabel", args: ["label": "best"])
        try host.perform("reset", args: [:])
        #expect(host.takeChanges() == [
            .replace(path: "/doubled", value: 6), .replace(path: "/count", value: 3), .add(path: "/history/1", value: 1),
            .replace(path: "/label", value: "best"), .replace(path: "/doubled", value: 0), .replace(path: "/count", value: 0),
        ])
        #expect(host.projection(for: Self.ana) == ["mine": 2], "the Views member, per viewer")
        #expect(host.context.freshSnapshot() == host.state)
    }

    @Test(arguments: [
        ("increment", ["by": "two"] as JSON, "args.by"),
        ("increment", ["step": 1] as JSON, "args.step"),
        ("setLabel", [:] as JSON, "label"),
        ("setLabel", ["label": nil] as JSON, "args.label"),
        ("reset", ["hard": true] as JSON, "unknown field args.hard (reset takes no arguments)"),
    ])
    func wrongArgumentsAreRefusedNamingWhatIsWrong(action: String, args: JSON, named: String) throws {
        let host = Self.kind.instantiate(room: "score")
        do {
            try host.perform(action, args: args)
            Issue.record("\(action) \(String(decoding: args.encoded(), as: UTF8.self)) was accepted")
        } catch ActionError.invalidArgs(let message) {
            #expect(message.contains(named), "message: \(message)")
        }
        #expect(host.takeChanges().isEmpty)
    }

    @Test func theContractsFailuresBecomeTheClientsErrors() throws {
        let host = Self.kind.instantiate(room: "score")
        try host.perform("increment", args: ["by": .int(Int.max)])
        #expect(throws: ActionError.refused(reason: "overflow", code: .invalidArgs, message: "count would overflow")) {
            try host.perform("increment", args: nil)
        }
        #expect(throws: ActionError.refused(reason: "tooLong", code: .invalidArgs, message: "the label \"too long a label\" is longer than 8 characters")) {
            try host.perform("setLabel", args: ["label": "too long a label"])
        }
        try host.perform("reset", args: nil)
        try host.perform("increment", args: nil)
        try host.perform("increment", args: nil)
        #expect(throws: ActionError.refused(reason: "full", code: .tooLarge, message: "the history holds at most 3 entries")) {
            try host.perform("increment", args: nil)
        }
        #expect(throws: ActionError.unknownAction("fly")) { try host.perform("fly", args: nil) }
        #expect(throws: DecodingError.self, "the ViewModel's own decoding error is the server's (internal)") {
            try host.perform("setLabel", args: ["label": "bug"])
        }
    }

    @Test func writableMembersAreRestoredAndTakenBack() throws {
        let host = Self.kind.instantiate(room: "score")
        try host.restore(from: ["count": 5, "doubled": 99, "label": "kept", "history": [5], "totals": ["ana": 5]])
        #expect(host.state == ["count": 5, "doubled": 10, "label": "kept", "history": [5], "totals": ["ana": 5]], "derived members are recomputed")
        #expect(host.takeChanges().isEmpty)
        try host.perform("increment", args: ["by": 1])
        host.takeBackTurn()
        #expect(host.state["count"] == 5)
        #expect(host.state["history"] == [5])
    }

    @Test func theKindCarriesTheContractsSchemaAndItsArgumentsAsBefore() {
        let schema = Self.kind.contractSchema
        #expect(schema == ContractSchema(ScoreContract.self))
        #expect(schema?.fingerprint.hasPrefix("sha256:") == true)
        #expect(schema?.stateNames == ["count", "doubled", "history", "label", "totals"])
        #expect(Self.kind.actions == [
            ActionDescription(name: "increment", arguments: [.init(name: "by", shape: .integer, isOptional: true)]),
            ActionDescription(name: "reset", arguments: []),
            ActionDescription(name: "setLabel", arguments: [.init(name: "label", shape: .string, isOptional: false)]),
        ])
        #expect(ViewModelKind("counter", scope: .shared, Plain.self).contractSchema == nil, "a ViewModel without a contract has none")
    }

    @Test func aKindTakesItsNameFromTheContract() {
        let kind = ViewModelKind(scope: .perSession, Score.self)
        #expect(kind.name == "score")
        #expect(kind.scope == .perSession)
    }

    @Test func presenceDataDecodesAsTheContractsType() {
        struct Named: Codable, Equatable { var name: String? }
        #expect(PresenceMember(id: "c1", user: "u1", data: ["name": "kim"]).data(as: Named.self) == Named(name: "kim"))
        #expect(PresenceMember(id: "c1", user: "u1", data: [:]).data(as: Named.self) == Named(name: nil))
        #expect(PresenceMember(id: "c1", user: "u1", data: ["name": 7]).data(as: Named.self) == nil, "data that does not fit")
    }

    @Test func aMemberOutsideTheContractIsNamed() {
        let schema = ContractSchema(ScoreContract.self)
        #expect(schema.publicationProblem(kind: "score", published: Set(schema.stateNames)) == nil)
        #expect(schema.publicationProblem(kind: "score", published: ["count", "doubled", "history", "totals", "extra"])
            == #"kind score publishes "extra" that its contract does not declare, and does not publish "label" of its contract"#)
    }
}

/// A ViewModel with the string-keyed API only.
final class Plain: ViewModel {
    init(context: ViewModelContext) { _ = context.property("count", 0) }
    static let actions = ActionTable<Plain>().on("reset") { _ in }
}
