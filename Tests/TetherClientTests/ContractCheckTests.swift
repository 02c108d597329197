import Testing
import TetherClient
import TetherDemoContracts
import TetherJSON
import TetherProtocol
import TetherTestSupport

/// The contract check at join: a client built against another contract than the server's
/// learns it when the room syncs, each difference named (docs/CLIENTS.md, "The contract check").
@Suite("The contract check at join", .serialized, .timeLimit(.minutes(1)))
@MainActor
struct ContractCheckTests {
    /// The verdict once there is one.
    func verdict<C>(_ room: ContractRoom<C>) async throws -> ContractCheck {
        try await eventually("the contract check") { room.contractCheck.value != .pending }
        return room.contractCheck.value
    }

    @Test func theSameContractMatches() async throws {
        let server = try DemoServer()
        let client = try await server.client()
        #expect(try await verdict(client.room(CounterContract.self)) == .matches)
        await client.close()
        await server.stop()
    }

    @Test func membersAndActionsTheServerLacksAreIncompatibleAndNamed() async throws {
        let server = try DemoServer()
        let client = try await server.client()
        let room = client.room(ExtendedCounter.self, "counter")
        guard case .incompatible(let comparison) = try await verdict(room) else { throw TestFailure("\(room.contractCheck.value)") }
        #expect(comparison.conflicts == [#"action "double": the server has none"#, #"state member "label": the server has none"#,
                                         #"view member "mine": the server has none"#])
        // The action the server lacks fails as the server would answer it, without being sent.
        do {
            try await room.double()
            Issue.record("double was acknowledged")
        } catch TetherClientError.server(let error) {
            #expect(error.code == .unknownAction && error.applied == .no && error.message.contains("checked at join"), "\(error)")
        }
        #expect(client.pendingActions.value.isEmpty)
        try await room.increment(.init(by: 1))  // what both have still works
        try await eventually("the increment") { room.count.value == 1 }
        await client.close()
        await server.stop()
    }

    @Test func aRetypedMemberIsIncompatibleAndItsStateIsNotShown() async throws {
        let server = try DemoServer()
        let client = try await server.client()
        let room = client.room(RetypedCounter.self, "counter")
        guard case .incompatible(let comparison) = try await verdict(room) else { throw TestFailure("\(room.contractCheck.value)") }
        #expect(comparison.conflicts.contains(#"state member "count": client string, server integer"#), "\(comparison.conflicts)")
        try await eventually("the snapshot") { room.remote.isSynced }
        #expect(room.decodingProblem.value?.contains("RetypedCounter.State") == true, "\(String(describing: room.decodingProblem.value))")
        #expect(room.state.value == RetypedCounter.State(), "the last state that decoded: the default")
        await client.close()
        await server.stop()
    }

    @Test func fewerActionsThanTheServerIsCompatible() async throws {
        let server = try DemoServer()
        let client = try await server.client()
        let room = client.room(SmallerCounter.self, "counter")
        guard case .compatible(let comparison) = try await verdict(room) else { throw TestFailure("\(room.contractCheck.value)") }
        #expect(comparison.additions == [#"action "decrement""#, #"action "reset""#, #"error "overflow""#])
        await client.close()
        await server.stop()
    }

    @Test func aKindWithoutASchemaIsUnchecked() async throws {
        let server = try DemoServer()
        let client = try await server.client()
        let room = client.room(SmallerCounter.self, "ledger")  // a test kind on the runtime API: no schema
        guard case .unchecked(let reason) = try await verdict(room) else { throw TestFailure("\(room.contractCheck.value)") }
        #expect(reason.contains("no contract schema"), "\(reason)")
        await client.close()
        await server.stop()
    }
}
