import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TetherDemos
import TetherServer
import UnixSignals

/// `tetherd`: the Tether server daemon with the demo ViewModels built in.
///
/// `tetherd [serve] [options]` runs the daemon; its settings come from flags, `TETHERD_*`
/// environment variables and a config file (TetherServer's `ConfigurationLoader`). The other
/// subcommands are tools around it.
@main
struct Tetherd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tetherd",
        subcommands: [Serve.self, Check.self, MintToken.self, BackupCommand.self, RestoreCommand.self, SampleConfig.self],
        defaultSubcommand: Serve.self,
        // `serve` answers --help with `usage`: the settings are ConfigurationLoader's, not options here.
        helpNames: [])

    static let programOptions: [ConfigurationOption] = [
        .program("test-kinds", value: nil, "Also register the `faulty` room used by tests.", hidden: true),
    ]

    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        var arguments = Array(CommandLine.arguments.dropFirst())
        // ArgumentParser's own `help` subcommand would print its generated help, not `usage`.
        if arguments.first == "help" { arguments = ["--help"] }
        await main(arguments)
    }

    static var usage: String {
        """
        tetherd \(TetherServer.version): serves MVVM ViewModels over WebSockets; every change becomes a JSON Patch \
        broadcast to the room's subscribers. Rooms: \(Demos.kinds.map(\.name).joined(separator: ", ")). Protocol: docs/PROTOCOL.md.

        USAGE:
          tetherd [serve] [options]        run the daemon (SIGHUP reloads the config file, SIGTERM stops)
          tetherd check [options]          validate the settings (config file, TLS files, secrets, data
                                           directory) without starting; exit 0, or one line per problem, 78
          tetherd token (--secret S | --secret-file F | --secrets-file F --kid K) --rooms PATTERNS
                        [--kid K] [--subject NAME] [--ttl SECONDS]
                                           print an access token (tetherd token --help)
          tetherd backup (--data DIR | --config FILE) BACKUP
                                           copy the database consistently, daemon running or not
          tetherd restore (--data DIR | --config FILE) [--replace] BACKUP
                                           check a backup and make it the data directory's database
          tetherd sample-config [options]  print a config file listing every setting (given ones set)

        Every option also comes from the environment (its TETHERD_ name below) or from a config file \
        (--config FILE or TETHERD_CONFIG; YAML or JSON, e.g. `port: 9000`). Flags beat the environment, \
        which beats the file, which beats the defaults. Settings marked reloadable change on SIGHUP.

        OPTIONS:
        \(ConfigurationOption.helpText(ConfigurationLoader(programOptions: programOptions).options))

        EXIT STATUS:
          0 stopped by SIGTERM/SIGINT; 64 bad option, setting or config file; 69 address or data directory \
        in use; 71 cannot listen; 73 data directory cannot be created; 74 storage I/O error; 78 unusable \
        TLS or secret file (and every problem `tetherd check` finds).
          backup and restore: \(DatabaseBackup.Failure.exitStatusHelp)
        """
    }

    static func serve(_ arguments: [String]) async {
        let environment = ProcessInfo.processInfo.environment
        let loader = ConfigurationLoader(programOptions: programOptions)
        let loaded: ConfigurationLoader.Result
        do {
            loaded = try loader.load(arguments: arguments, environment: environment)
        } catch {
            fail(error.problems.map(\.description), exitCode: 64)
        }
        let configuration = {
            var configuration = loaded.configuration
            configuration.withholdsAcksForTests = environment["TETHERD_TEST_WITHHOLD_ACKS"] == "1"
            return configuration
        }()
        // The handlers read their level from here, so a reload can change it.
        let logLevel = ReloadableLogLevel(configuration.logLevel)
        LoggingSystem.bootstrap { label -> any LogHandler in
            switch configuration.logFormat {
            case .json: return logLevel.handler(JSONLogHandler(label: label, level: .trace))
            case .text: return logLevel.handler(StreamLogHandler.standardError(label: label))
            }
        }
        let logger = Logger(label: "tetherd")
        for warning in loaded.warnings { logger.warning("\(warning)") }
        let kinds = Demos.kinds + (loaded.programValues["test-kinds"] == "true" ? Demos.testKinds : [])
        // Trapped before the server starts: a SIGHUP right after the "listening" line reloads,
        // never kills (its default action).
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let notifier = SystemdNotifier()
        do {
            let server = try await TetherServer.make(configuration: configuration, kinds: kinds, logger: logger)
            let reloader = Reloader(server: server, logLevel: logLevel, notifier: notifier, logger: logger) { () throws(ConfigurationError) in
                // Read as at start: the same flags and environment, the config file again.
                try loader.load(arguments: arguments, environment: environment).configuration
            }
            // The signal handlers are in place before the server starts: a SIGTERM right after the
            // "listening" line is a graceful shutdown, never a kill.
            let group = ServiceGroup(
                services: [Listening(server: server, notifier: notifier), ReloadOnHangup(hangups: hangups, reloader: reloader),
                           SystemdNotifierService(notifier: notifier, server: server)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            try await group.run()
            // Exit with the server still referenced: its objects are not freed by other threads
            // while exit runs (LeakSanitizer, in the AddressSanitizer test stage, then saw a
            // half-freed graph: a weak reference's side table whose only holder had just gone).
            withExtendedLifetime(server) { Glibc.exit(0) }
        } catch let error as StartupError {
            fail(error.description, exitCode: error.exitCode)
        } catch {
            fail("\(error)", exitCode: 70)
        }
    }

    /// `tetherd check`: the settings as `serve` would read them, then what only starting shows;
    /// every problem found, one line each.
    static func check(_ arguments: [String]) {
        let loaded: ConfigurationLoader.Result
        do {
            loaded = try ConfigurationLoader(programOptions: programOptions).load(arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            fail(error.problems.map { "check: \($0)" }, exitCode: 78)
        }
        let kinds = Demos.kinds + (loaded.programValues["test-kinds"] == "true" ? Demos.testKinds : [])
        let problems = ConfigurationCheck.problems(loaded.configuration)
            + [TetherServer.roomExpiryProblem(in: loaded.configuration, kinds: kinds)].compactMap { $0 }
        guard problems.isEmpty else { fail(problems.map { "check: \($0)" }, exitCode: 78) }
        for warning in loaded.warnings { FileHandle.standardError.write(Data("tetherd: check: warning: \(warning)\n".utf8)) }
        for warning in natsDurabilityWarnings(loaded.configuration) {
            FileHandle.standardError.write(Data("tetherd: check: warning: \(warning)\n".utf8))
        }
        let keys = identityProviderCheck(loaded.configuration)
        if case .failure(let error) = keys { FileHandle.standardError.write(Data("tetherd: check: warning: \(error.description)\n".utf8)) }
        let source = loaded.configFile.map { "\($0) is" } ?? "the settings are"
        print("tetherd check: \(source) valid: \(loaded.configuration.summary(port: loaded.configuration.port))")
        if case .success(let found) = keys { print("tetherd check: \(found)") }
    }

    /// With an identity provider: one fetch of its key set (a failure is a warning: the daemon
    /// starts anyway, refusing the provider's tokens until a fetch works).
    static func identityProviderCheck(_ configuration: ServerConfiguration) -> Result<String, JWKSCheckError>? {
        guard let provider = configuration.identityProvider else { return nil }
        let result = Mutex<Result<String, JWKSCheckError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let found = await provider.checkKeys()
            result.withLock { $0 = found }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    /// On a cluster: the NATS servers that do not fsync each write before their ack (their
    /// `/varz`), or that `--nats-monitoring` is needed to tell.
    static func natsDurabilityWarnings(_ configuration: ServerConfiguration) -> [String] {
        guard !configuration.natsURLs.isEmpty else { return [] }
        guard !configuration.natsMonitoringURLs.isEmpty else {
            return ["whether the NATS servers fsync each write before their ack is not checked: give their monitoring endpoints with --nats-monitoring"]
        }
        let findings = Mutex<[NATSDurability.Finding]>([])
        let done = DispatchSemaphore(value: 0)
        Task {
            let found = await NATSDurability.check(monitoringURLs: configuration.natsMonitoringURLs)
            findings.withLock { $0 = found }
            done.signal()
        }
        done.wait()
        return findings.withLock { $0 }.filter { !$0.isDurable }.map(\.description)
    }

    /// `tetherd sample-config [--KEY VALUE ...]`: the commented config file.
    static func sampleConfig(_ arguments: [String]) {
        do {
            print(try SampleConfiguration.text(arguments: arguments), terminator: "")
        } catch {
            fail(error.description, exitCode: 64)
        }
    }

    static func fail(_ message: String, exitCode: Int32) -> Never {
        fail([message], exitCode: exitCode)
    }

    /// One line on stderr per problem, then exit.
    static func fail(_ problems: [String], exitCode: Int32) -> Never {
        FileHandle.standardError.write(Data(problems.map { "tetherd: \($0)\n" }.joined().utf8))
        Glibc.exit(exitCode)
    }
}

/// `tetherd [serve] [options]`: runs the daemon. The settings are read by ConfigurationLoader,
/// not ArgumentParser: swift-configuration's command-line provider neither refuses unknown flags
/// nor keeps commas in a value, so tetherd reads its own command line (ConfigurationLoader).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the daemon (the default).", helpNames: [])

    @Argument(parsing: .captureForPassthrough) var settings: [String] = []

    func run() async {
        if settings.first == "--version" {
            print(TetherServer.version)
        } else if settings.contains("--help") || settings.contains("-h") {
            print(Tetherd.usage)
        } else {
            await Tetherd.serve(settings)
        }
    }
}

/// `tetherd check [options]`: the settings as `serve` reads them (ConfigurationLoader's flags).
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Validate the settings without starting.", helpNames: [])

    @Argument(parsing: .captureForPassthrough) var settings: [String] = []

    func run() { Tetherd.check(settings) }
}

/// `tetherd sample-config [options]`: ConfigurationLoader's flags, as for `serve`.
struct SampleConfig: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sample-config", abstract: "Print a config file listing every setting.", helpNames: [])

    @Argument(parsing: .captureForPassthrough) var settings: [String] = []

    func run() { Tetherd.sampleConfig(settings) }
}
