import Testing
import TetherContract
import TetherJSON
@testable import TetherState

/// The one check a hand-written contract leaves to run time: an instance publishes exactly the
/// contract's members (a failure stops the program, so its message is tested here).
@Suite("A contract's members against what an instance publishes")
struct ContractConformanceCheckTests {
    static let schema = ContractSchema(ScoreContract.self)

    static func context(shared: [String], views: [String]) -> ViewModelContext {
        let context = ViewModelContext(room: "score")
        for name in shared { _ = context.property(name, 0) }
        for name in views { context.perViewer(name) { _ in 1 } }
        return context
    }

    @Test func exactlyTheContractsMembersPass() {
        let context = Self.context(shared: ["count", "doubled", "label", "history", "totals"], views: ["mine"])
        #expect(context.contractProblem(kind: "score", schema: Self.schema) == nil)
    }

    @Test func anExtraOrMissingSharedMemberIsNamed() {
        let context = Self.context(shared: ["count", "doubled", "label", "history", "extra"], views: ["mine"])
        #expect(context.contractProblem(kind: "score", schema: Self.schema)
            == #"kind score publishes "extra" that its contract does not declare, and does not publish "totals" of its contract"#)
    }

    @Test func aPerViewerValueOutsideTheContractIsNamed() {
        let context = Self.context(shared: ["count", "doubled", "label", "history", "totals"], views: ["mine", "rank"])
        #expect(context.contractProblem(kind: "score", schema: Self.schema)
            == #"kind score computes per-viewer values ["mine", "rank"] but its contract declares ["mine"]"#)
    }

    @Test func theStringKeyedAPIStillChainsOntoAContractsTable() throws {
        let table = ActionTable(ScoreContract.binding(Score.self)).on("ping") { _ in }
        #expect(table.names == ["increment", "ping", "reset", "setLabel"])
        #expect(table.contract == ScoreContract.self)
    }
}
