import Testing
import TetherBinding
import TetherContract
import TetherJSON
import TetherProtocol
import TetherServer
import TetherState
import TetherTesting

/// A small contract written by hand, and its ViewModel.
enum LampContract: Contract {
    struct State: Codable, Sendable, Equatable {
        var on = false
        var brightness = 0
    }
    struct DimArgs: Codable, Sendable, Equatable { var to: Int }
    enum Failure: String, ContractFailure {
        case outOfRange
        var message: String { "brightness is 0 to 100" }
    }

    static let kind = "lamp"
    static let on = StateField<State, Bool>("on", \.on)
    static let brightness = StateField<State, Int>("brightness", \.brightness)
    static let toggle = ContractAction<LampContract, NoArgs>("toggle")
    static let dim = ContractAction<LampContract, DimArgs>("dim")
    static var actionList: [AnyContractAction] { [.init(toggle), .init(dim)] }
}

final class Lamp: ViewModel {
    let on = Observable(false)
    let brightness = Observable(0)
    init(context: ViewModelContext) {}

    static let actions = ActionTable(ContractBinding<Lamp>(
        LampContract.self,
        publish: { lamp, target in
            target.publish(LampContract.on, lamp.on)
            target.publish(LampContract.brightness, lamp.brightness)
        },
        actions: [
            ContractHandler(LampContract.toggle) { lamp, _ in lamp.on.value.toggle() },
            ContractHandler(LampContract.dim) { lamp, args in
                guard (0...100).contains(args.to) else { throw LampContract.Failure.outOfRange }
                lamp.brightness.value = args.to
            },
        ]))
}

/// A contract's kind served by the real hub: its state, typed actions, refusals and `describe`.
@Suite("A contract's kind on the server")
struct ContractKindTests {
    static func server() -> TestServer { TestServer(kinds: [ViewModelKind("lamp", scope: .shared, Lamp.self)]) }

    static func client(_ server: TestServer) -> TestClient {
        let client = server.connect()
        #expect(client.receive()?.type == "hello")
        return client
    }

    @Test func clientsSeeTheContractsStateAndItsActionsChangeIt() {
        let server = Self.server()
        let client = Self.client(server)
        client.send(.join(room: "lamp", id: 1))
        #expect(client.receiveAll().map(\.type) == ["snapshot", "ack"])
        #expect(client.state(of: "lamp") == ["on": false, "brightness": 0])
        client.send(.action(room: "lamp", name: "dim", args: ["to": 40], id: 2))
        client.send(.action(room: "lamp", name: "toggle", args: nil, id: 3))
        _ = client.receiveAll()
        #expect(client.state(of: "lamp") == ["on": true, "brightness": 40])
    }

    @Test(arguments: [
        (["to": "bright"] as JSON, nil as String?, "args.to"),
        ([:] as JSON, nil, "to"),
        (["to": 40, "fade": true] as JSON, nil, "args.fade"),
        (["to": 101] as JSON, "outOfRange", "brightness is 0 to 100"),
    ])
    func badArgumentsAreRefusedWithAClearError(args: JSON, reason: String?, naming: String) {
        let server = Self.server()
        let client = Self.client(server)
        client.send(.join(room: "lamp", id: 1))
        _ = client.receiveAll()
        client.send(.action(room: "lamp", name: "dim", args: args, id: 2))
        let error = client.receiveAll().compactMap(\.error).first
        #expect(error?.code == .invalidArgs)
        #expect(error?.message.contains(naming) == true, "message: \(error?.message ?? "none")")
        #expect(error?.reason == reason, "the contract's failure case, for a refusal only")
        #expect(client.state(of: "lamp") == ["on": false, "brightness": 0])
    }

    @Test func aRefusalForwardedToTheRoomsOwnerKeepsItsReason() {
        let cluster = TestCluster(nodes: 2, kinds: [ViewModelKind("lamp", scope: .shared, Lamp.self)])
        let alice = cluster.nodes[0].connect()
        alice.send(.join(room: "lamp"))
        alice.send(.action(room: "lamp", name: "toggle", args: nil, id: 1))  // node 0 owns the room from here
        _ = alice.receiveAll()
        let bob = cluster.nodes[1].connect()
        bob.send(.join(room: "lamp"))
        bob.discardReceived()
        bob.send(.action(room: "lamp", name: "dim", args: ["to": 101], id: 2))
        let error = bob.receiveAll().compactMap(\.error).first
        #expect(error?.reason == "outOfRange")
        #expect(error?.message == "brightness is 0 to 100")
    }

    @Test func describeCarriesTheSchemaAndFingerprint() throws {
        let server = Self.server()
        let client = Self.client(server)
        client.send(.describe(kind: "lamp", id: 1))
        guard case .description(_, let kinds)? = client.receive(), let lamp = kinds.first else { Issue.record("no description"); return }
        let expected = ContractSchema(LampContract.self)
        #expect(lamp.schema == expected.document)
        #expect(lamp.fingerprint == expected.fingerprint)
        #expect(lamp.schema?["state"]?["required"] == ["brightness", "on"])
        #expect(lamp.schema?["actions"]?["dim"]?["required"] == ["to"])
        #expect(lamp.schema?["errors"] == ["outOfRange": ["code": "invalid_args"]])
        #expect(lamp.actions.map(\.name) == ["dim", "toggle"], "the actions' args as before")
        client.send(.describe(id: 2))
        guard case .description(_, let all)? = client.receive() else { Issue.record("no description"); return }
        let system = all.first { $0.name == "tether.server" }
        #expect(system != nil && system?.schema == nil && system?.fingerprint == nil, "a kind without a contract has neither")
    }
}
