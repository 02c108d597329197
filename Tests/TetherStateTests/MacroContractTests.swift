import Testing
import TetherBinding
import TetherContract
import TetherJSON
import TetherState

/// A contract written by `@Contract` at work in a ViewModel: the same document, actions, errors
/// and schema as the hand-written `ScoreContract` it copies.
@Suite("A ViewModel implementing a @Contract")
struct MacroContractTests {
    static let kind = ViewModelKind(scope: .shared, Tally.self)
    static let ana = Viewer(id: "ana")

    @Test func theKindIsNamedByTheMacrosArgument() {
        #expect(Self.kind.name == "tally")
        #expect(TallyContract.kind == "tally")
        #expect(TallyContract.actionList.map(\.name) == ["increment", "setLabel", "reset"])
    }

    @Test func theGeneratedBindingPublishesAndPerforms() throws {
        let host = Self.kind.instantiate(room: "tally")
        #expect(host.state == ["count": 0, "doubled": 0, "label": nil, "history": [], "totals": [:]])
        try host.perform("increment", args: ["by": 2], viewer: Self.ana)
        try host.perform("increment", args: nil)
        try host.perform("setLabel", args: ["label": "best"])
        try host.perform("reset", args: [:])
        #expect(try JSONValueDecoder().decode(TallyContract.State.self, from: host.state)
            == TallyContract.State(count: 0, doubled: 0, label: "best", history: [2, 1], totals: ["ana": 2]))
        #expect(host.projection(for: Self.ana) == ["mine": 2], "the Views member, per viewer")
    }

    @Test func theGeneratedArgumentsAreStrict() throws {
        let host = Self.kind.instantiate(room: "tally")
        #expect(throws: ActionError.self) { try host.perform("increment", args: ["step": 1]) }
        #expect(throws: ActionError.self) { try host.perform("setLabel", args: [:]) }
        #expect(throws: ActionError.invalidArgs("unknown field args.hard (reset takes no arguments)")) {
            try host.perform("reset", args: ["hard": true])
        }
        #expect(TallyContract.IncrementArgs() == TallyContract.IncrementArgs(by: nil), "an Optional argument defaults to nil")
        #expect(host.takeChanges().isEmpty)
    }

    @Test func theContractsFailuresBecomeTheClientsErrors() throws {
        let host = Self.kind.instantiate(room: "tally")
        try host.perform("increment", args: ["by": .int(Int.max)])
        #expect(throws: ActionError.refused(reason: "overflow", code: .invalidArgs, message: "count would overflow")) {
            try host.perform("increment", args: nil)
        }
        #expect(throws: ActionError.refused(reason: "tooLong", code: .invalidArgs, message: "the label \"too long a label\" is longer than 8 characters")) {
            try host.perform("setLabel", args: ["label": "too long a label"])
        }
    }

    @Test func aPublicContractWorksAsWell() throws {
        let host = ViewModelKind(scope: .shared, Ping.self).instantiate(room: "ping")
        try host.perform("ping", args: ["times": 2])
        #expect(host.state == ["pings": 2])
        #expect(PingContract.PingArgs(times: 2).times == 2)
        #expect(throws: ActionError.refused(reason: "tooMany", code: .invalidArgs, message: "at most 10 pings at once")) {
            try host.perform("ping", args: ["times": 11])
        }
        let schema = ContractSchema(PingContract.self).document
        #expect(schema["presence"]?["properties"]?["name"] != nil, "the nested Presence is the contract's")
        #expect(schema["errors"] == ["tooMany": ["code": "invalid_args"]])
    }

    @Test func theSchemaIsTheHandWrittenContracts() {
        let generated = ContractSchema(TallyContract.self)
        #expect(Self.kind.contractSchema == generated)
        #expect(generated.fingerprint == ContractSchema(ScoreContract.self).fingerprint)
        #expect(generated.document["state"]?["properties"]?["count"]?["default"] == 0, "defaultState is State()")
    }
}
