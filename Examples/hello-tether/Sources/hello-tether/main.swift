import Foundation
import Logging
import ServiceLifecycle
import TetherBinding
import TetherDemos
import TetherServer
import TetherState

final class Counter: ViewModel {
    let count: Observable<Int>

    init(context: ViewModelContext) {
        count = context.property("count", 0)          // published as {"count": 0}
    }

    struct Step: Decodable { var by: Int? }          // typed arguments; an unknown field is invalid_args

    static let actions = ActionTable<Counter>()
        .on("increment", Step.self) { model, args in
            let (sum, overflow) = model.count.value.addingReportingOverflow(args.by ?? 1)
            guard !overflow else { throw ActionError.invalidArgs("count would overflow") }  // the sender gets invalid_args
            model.count.value = sum
        }
        .on("reset") { model in model.count.value = 0 }
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
