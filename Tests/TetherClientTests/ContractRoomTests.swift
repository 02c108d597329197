import Testing
import TetherBinding
import TetherClient
import TetherContract
import TetherDemoContracts
import TetherJSON
import TetherProtocol
import TetherTestSupport

/// A room seen through `CounterContract`, against the demo counter on an in-process server:
/// typed state and members, typed actions with predictions, typed refusals, typed presence.
@Suite("Typed rooms of a contract", .serialized, .timeLimit(.minutes(1)))
@MainActor
struct ContractRoomTests {
    final class Recorder<Value> {
        var values: [Value] = []
        let bag = CancellableBag()
    }

    @Test func typedMembersFollowAnotherClientsChanges() async throws {
        let server = try DemoServer()
        let (client, other) = (try await server.client(), try await server.client())
        let counter = client.room(CounterContract.self)
        #expect(counter.count.value == 0, "the default state before the snapshot")
        #expect(client.room(CounterContract.self, "counter") === counter, "one per room and contract")
        let seen = Recorder<Int>()
        client.room(CounterContract.self).count.bind { seen.values.append($0) }.store(in: seen.bag)  // the client keeps the room
        try await eventually("the snapshot") { counter.remote.isSynced }

        try await other.room("counter").send("increment", ["by": 3])
        try await eventually("the patch") { counter.count.value == 3 }
        #expect(counter.state.value.count == 3)
        #expect(seen.values == [0, 3])
        await client.close()
        await other.close()
        await server.stop()
    }

    @Test func aRoomLeftOrOfAClosedClientIsReleased() async throws {
        let server = try DemoServer()
        let client = try await server.client()
        weak let left = client.room(CounterContract.self, "counter:left")
        weak let open = client.room(CounterContract.self, "counter:open")
        #expect(left != nil && open != nil, "the client keeps them")
        left?.remote.leave()
        #expect(left == nil)
        await client.close()
        #expect(open == nil)
        await server.stop()
    }

    @Test func aPredictionShowsAtOnceAndTheServersValueReplacesIt() async throws {
        let server = try DemoServer()
        let client = try await server.client()
        let counter = client.room(CounterContract.self, "counter:predicted")
        try await eventually("the snapshot") { counter.remote.isSynced }
        // Each value shown, with the server's count at that moment.
        let seen = Recorder<(shown: Int, server: Int?)>()
        counter.count.observe { seen.values.append(($0, counter.remote.serverState["count"]?.intValue)) }.store(in: seen.bag)

        let version = try await counter.increment(.init(by: 2), predict: { $0.count += 2 })
        #expect(version > 0)
        #expect(seen.values.map(\.shown) == [2], "shown once, not counted twice")
        #expect(seen.values.first?.server == 0, "shown before the server's answer")

        // A prediction the server does not bear out: the server's value replaces it.
        try await counter.increment(.init(by: 2), predict: { $0.count += 10 })
        #expect(seen.values.map(\.shown) == [2, 12, 4])
        #expect(counter.count.value == 4 && counter.remote.serverState["count"] == 4)
        await client.close()
        await server.stop()
    }

    @Test func aTypedRefusalIsThrownAsTheContractsFailure() async throws {
        let server = try DemoServer()
        let client = try await server.client()
        let counter = client.room(CounterContract.self, "counter:full")
        try await counter.remote.send("increment", ["by": .int(Int.max - 1)])
        await #expect(throws: CounterContract.Failure.overflow) {
            try await counter.increment(.init(by: 2))
        }
        // Errors that are no refusal of the contract stay the client's.
        do {
            try await counter.remote.send("fly")
            Issue.record("fly was acknowledged")
        } catch TetherClientError.server(let error) {
            #expect(error.code == .unknownAction)
        }
        try await counter.reset()
        try await eventually("the reset") { counter.count.value == 0 }
        await client.close()
        await server.stop()
    }

    @Test func anActionQueuedWhileDisconnectedIsSentOnceAfterReconnecting() async throws {
        let first = try DemoServer()
        let client = try await first.client()
        let counter = client.room(CounterContract.self)
        try await eventually("the check") { counter.contractCheck.value == .matches }
        await first.stop()
        try await eventually("the drop") { !client.connectionState.value.isConnected }
        #expect(counter.contractCheck.value == .pending, "checked again on the next connection")

        let sent = Task { try await counter.increment(.init(by: 2), predict: { $0.count += 2 }) }
        try await eventually("queued") { client.pendingActions.value.count == 1 }
        #expect(counter.count.value == 2, "the prediction shows while offline")
        let second = try DemoServer(port: first.port)
        _ = try await sent.value  // its patch came before its ack
        try await Task.sleep(for: .milliseconds(100))  // time for a second run to show
        #expect(counter.remote.serverState["count"] == 2 && counter.count.value == 2, "sent once")
        try await eventually("the check after reconnecting") { counter.contractCheck.value == .matches }
        await client.close()
        await second.stop()
    }

    /// Against a scripted server: a State of two members, a Views member, and a member no contract declares.
    @Test func membersFireOnlyWhenTheyChangedAndMembersTheContractLacksStay() async throws {
        let server = try ScriptedServer(greeting: [#"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#]) { text in
            guard let frame = try? JSONParser().parse(text), frame["type"] == "join" else { return [] }  // actions unanswered
            return [#"{"type":"snapshot","room":"c","epoch":"E","version":1,"state":{"count":1,"label":"a","extra":true,"mine":7}}"#]
        }
        defer { server.stop() }
        let client = TetherClient(options: ClientOptions(url: server.url))
        try client.connect()
        let room = client.room(ExtendedCounter.self, "c")
        try await eventually("the snapshot") { room.count.value == 1 }
        #expect(room.views.value.mine == 7, "the viewer's own members, beside the state's")
        let counts = Recorder<Int>()
        room.count.bind { counts.values.append($0) }.store(in: counts.bag)
        server.broadcast([#"{"type":"patch","room":"c","epoch":"E","from":1,"version":2,"ops":[{"op":"replace","path":"/label","value":"b"}]}"#])
        try await eventually("the patch") { room.label.value == "b" }
        #expect(counts.values == [1], "count did not change")

        let sent = Task { try? await room.increment(.init(by: 1), predict: { $0.count += 1 }) }
        try await eventually("the prediction") { room.count.value == 2 }
        #expect(room.remote.state == ["count": 2, "label": "b", "extra": true, "mine": 7])
        await client.close()
        _ = await sent.value
    }

    @Test func presenceDataIsTyped() async throws {
        let server = try DemoServer()
        let client = try await server.client(presence: ["name": "ann"])
        let counter = client.room(NamedCounter.self, "counter:present")
        try await eventually("ann") { counter.members.value.map(\.data) == [NamedCounter.Presence(name: "ann")] }
        try await counter.setPresence(.init(name: "bob"))
        try await eventually("bob") { counter.members.value.map(\.data) == [NamedCounter.Presence(name: "bob")] }
        await client.close()
        await server.stop()
    }
}
