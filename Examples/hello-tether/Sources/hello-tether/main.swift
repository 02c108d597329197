import Foundation
import Logging
import ServiceLifecycle
import TetherBinding
import TetherContract
import TetherContractMacro
import TetherDemos
import TetherServer
import TetherState

// The contract: what clients see and may do, declared once for the server and its clients.
@Contract("counter2")
enum CounterContract {
    struct State: Codable, Sendable, Equatable {
        var count: Int = 0                           // published as {"count": 0}
    }
    enum Failure: String, ContractFailure {          // refusals clients can tell apart ("reason")
        case overflow
        var message: String { "count would overflow" }
    }
    protocol Actions {
        func increment(by: Int?) throws              // {"by": 2}; an unknown field is invalid_args
        func reset()
    }
}

// The ViewModel implements it: the compiler checks each member and action against the contract.
final class Counter: ViewModel, CounterContract.Implementation {
    let count = Observable(0)

    init(context: ViewModelContext) {}

    static let actions = ActionTable(CounterContract.binding(Counter.self))

    func increment(by: Int?) throws {
        let (sum, overflow) = count.value.addingReportingOverflow(by ?? 1)
        guard !overflow else { throw CounterContract.Failure.overflow }  // the sender gets invalid_args
        count.value = sum
    }

    func reset() { count.value = 0 }
}

// Settings as tetherd reads them: flags (--port 9000), TETHERD_* variables, --config FILE, defaults.
let configuration = try ConfigurationLoader().load(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment
).configuration
var logger = Logger(label: "hello-tether")
logger.logLevel = configuration.logLevel

let kinds = Demos.kinds + [ViewModelKind("counter2", scope: .shared, Counter.self)]
let server = try TetherServer(configuration: configuration, kinds: kinds, logger: logger)
// Serves until SIGTERM or SIGINT, then shuts down gracefully (clients get 1001); other services
// (an HTTP app, say) can run in the same group.
try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
