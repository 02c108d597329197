import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TetherDemos
import TetherServer

/// `tetherd`: the Tether server daemon with the demo ViewModels built in.
///
/// `tetherd [serve] [options]` runs the daemon; its settings come from flags, `TETHERD_*`
/// environment variables and a config file (TetherServer's `ConfigurationLoader`). The other
/// subcommands are tools around it.
@main
enum Tetherd {
    static let programOptions: [ConfigurationOption] = [
        .program(ConfigurationLoader.configFileKey, value: "path", "A config file (YAML or JSON) with any of the settings below, keys as the option names without dashes."),
        .program("test-kinds", value: nil, "Also register the `faulty` room used by tests.", hidden: true),
    ]

    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        var arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "token":
            await MintToken.main(Array(arguments.dropFirst()))
        case "help", "--help", "-h":
            print(usage)
        case "--version":
            print(TetherServer.version)
        default:
            if arguments.first == "serve" { arguments.removeFirst() }
            if arguments.contains("--help") || arguments.contains("-h") {
                print(usage)
                return
            }
            await serve(arguments)
        }
    }

    static var usage: String {
        """
        tetherd \(TetherServer.version): serves MVVM ViewModels over WebSockets; every change becomes a JSON Patch \
        broadcast to the room's subscribers. Rooms: \(Demos.kinds.map(\.name).joined(separator: ", ")). Protocol: docs/PROTOCOL.md.

        USAGE:
          tetherd [serve] [options]        run the daemon
          tetherd token --secret S --rooms PATTERNS [--subject NAME] [--ttl SECONDS]
                                           print an access token (tetherd token --help)

        Every option also comes from the environment (its TETHERD_ name below) or from a config file \
        (--config FILE or TETHERD_CONFIG; YAML or JSON, e.g. `port: 9000`). Flags beat the environment, \
        which beats the file, which beats the defaults. Settings marked reloadable change on SIGHUP.

        OPTIONS:
        \(ConfigurationOption.helpText(ConfigurationLoader(programOptions: programOptions).options))

        EXIT STATUS:
          0 stopped by SIGTERM/SIGINT; 64 bad option, setting or config file; 69 address or data directory \
        in use; 71 cannot listen; 73 data directory cannot be created; 74 storage I/O error; 78 unusable \
        TLS or secret file.
        """
    }

    static func serve(_ arguments: [String]) async {
        let loaded: ConfigurationLoader.Result
        do {
            loaded = try ConfigurationLoader(programOptions: programOptions).load(arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            fail(error.description, exitCode: 64)
        }
        let configuration = loaded.configuration
        LoggingSystem.bootstrap { label in
            switch configuration.logFormat {
            case .json: return JSONLogHandler(label: label, level: configuration.logLevel)
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = configuration.logLevel
                return handler
            }
        }
        let logger = Logger(label: "tetherd")
        let kinds = Demos.kinds + (loaded.programValues["test-kinds"] == "true" ? Demos.testKinds : [])
        do {
            let server = try TetherServer(configuration: configuration, kinds: kinds, logger: logger)
            // The signal handlers are in place before the server starts: a SIGTERM right after the
            // "listening" line is a graceful shutdown, never a kill.
            let group = ServiceGroup(services: [Listening(server: server)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            try await group.run()
        } catch let error as StartupError {
            fail(error.description, exitCode: error.exitCode)
        } catch {
            fail("\(error)", exitCode: 70)
        }
    }

    static func fail(_ message: String, exitCode: Int32) -> Never {
        FileHandle.standardError.write(Data("tetherd: \(message)\n".utf8))
        exit(exitCode)
    }
}

/// Starts the server, then prints the one line scripts wait for (stdout may be a pipe they read).
struct Listening: Service {
    let server: TetherServer

    func run() async throws {
        let port = try server.start()
        FileHandle.standardOutput.write(Data("tetherd listening on \(server.configuration.scheme)://\(server.configuration.host):\(port)\n".utf8))
        try await server.run()
    }
}

/// `tetherd token`: mints an access token for local use.
struct MintToken: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tetherd token",
        abstract: "Print an HS256 access token for the daemon's auth secret.",
        discussion: "Example: tetherd token --secret s3cret --subject alice --rooms 'todo:*,counter' --ttl 3600")

    @Option(help: "The daemon's auth secret.")
    var secret: String

    @Option(help: "Who the token is for (the sub claim).")
    var subject = "local"

    @Option(help: "Comma-separated room patterns: a name, or a prefix ending in * (todo:*, *).")
    var rooms: String

    @Option(help: "Seconds until the token expires.")
    var ttl = 3600

    func run() {
        let claims = AccessClaims(
            subject: subject, expires: Int(Date().timeIntervalSince1970) + ttl,
            rooms: rooms.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        print(TokenAuthority(secret: Array(secret.utf8)).mint(claims))
    }
}
