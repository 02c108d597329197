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
        let source = loaded.configFile.map { "\($0) is" } ?? "the settings are"
        print("tetherd check: \(source) valid: \(loaded.configuration.summary(port: loaded.configuration.port))")
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

/// Starts the server, then prints the one line scripts wait for (stdout may be a pipe they
/// read) and tells systemd it is ready.
struct Listening: Service {
    let server: TetherServer
    let notifier: SystemdNotifier

    func run() async throws {
        let port = try server.start()
        server.announceListening(port: port)
        notifier.notify("READY=1\nSTATUS=listening on port \(port)")
        try await server.run()
    }
}

/// A reload: the settings read again, the reloadable ones applied, the log level followed.
/// A reload that fails changes nothing and says why in one line.
struct Reloader: Sendable {
    let server: TetherServer
    let logLevel: ReloadableLogLevel
    let notifier: SystemdNotifier
    let logger: Logger
    let read: @Sendable () throws(ConfigurationError) -> ServerConfiguration

    func reload() async {
        notifier.notify("RELOADING=1\nSTATUS=reloading")
        do {
            try await server.reload(try read())
            logLevel.current = server.configuration.logLevel
        } catch {
            logger.error("reload failed, keeping the running configuration: \(error)")
        }
        server.withStatus { [notifier] status in notifier.notify("READY=1\nSTATUS=\(status.summary)") }
    }
}

/// Reloads on every SIGHUP until the group shuts down.
struct ReloadOnHangup: Service {
    let hangups: UnixSignalsSequence
    let reloader: Reloader

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in hangups { await reloader.reload() }
        }
    }
}

/// `tetherd token`: mints an access token for local use.
struct MintToken: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print an HS256 access token for one of the daemon's secrets.",
        discussion: """
            Examples:
              tetherd token --secret s3cret --subject alice --rooms 'todo:*,counter' --ttl 3600
              tetherd token --secrets-file /etc/tether/secrets.yaml --kid 2026-04 --rooms '*'
              tetherd token --secret s3cret --subject ops --rooms '*' --admin
            With --kid the token's header names that key; the daemon checks it with the secret of that name \
            (auth-secrets-file). Without, it checks it with its unnamed secret (auth-secret, auth-secret-file). \
            With --admin the token also opens the server's overview room tether.server (the dashboard at /).
            """,
        helpNames: [.long, .short])  // the root has none (serve answers --help)

    @Option(help: "The secret itself (visible in ps; prefer a file).")
    var secret: String?

    @Option(help: "A file holding the secret (as auth-secret-file).")
    var secretFile: String?

    @Option(help: "A file of kid: secret lines (as auth-secrets-file); --kid picks the secret.")
    var secretsFile: String?

    @Option(help: "The key name (kid) to put in the token's header.")
    var kid: String?

    @Option(help: "Who the token is for (the sub claim).")
    var subject = "local"

    @Option(help: "Comma-separated room patterns: a name, or a prefix ending in * (todo:*, *).")
    var rooms: String

    // Unconditional: "--ttl -5" is a (refused) number, not a missing value followed by an option.
    @Option(parsing: .unconditional, help: "Seconds until the token expires (at least 1).")
    var ttl = 3600

    @Flag(help: "Also open the server's overview room tether.server (the dashboard's figures and room list).")
    var admin = false

    func validate() throws {
        guard [secret, secretFile, secretsFile].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give one of --secret, --secret-file, --secrets-file")
        }
        if secretsFile != nil, kid == nil { throw ValidationError("--secrets-file needs --kid to pick the secret") }
        guard ttl > 0 else { throw ValidationError("--ttl must be a positive number of seconds, not \(ttl): that token would be expired when printed") }
    }

    func run() throws {
        let authority: TokenAuthority
        do {
            if let secretsFile {
                authority = TokenAuthority(secret: nil, named: try TokenSecretsFile.read(secretsFile))
            } else {
                // Read as the daemon reads auth-secret / auth-secret-file.
                let arguments = secret.map { ["--auth-secret", $0] } ?? ["--auth-secret-file", secretFile!]
                let unnamed = try ConfigurationLoader().load(arguments: arguments, environment: [:]).configuration.auth!
                authority = kid.map { unnamed.namingUnnamedSecret($0) } ?? unnamed
            }
        } catch {
            throw ValidationError(error.description)
        }
        let claims = AccessClaims(
            subject: subject, expires: Int(Date().timeIntervalSince1970) + ttl,
            rooms: rooms.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }, admin: admin)
        guard let token = authority.mint(claims, kid: kid) else {
            throw ValidationError("\(secretsFile ?? "the secrets file") has no secret named \(kid ?? "")")
        }
        print(token)
    }
}

/// Where `backup` and `restore` find the data directory: --data, or the config's `data`.
struct DataDirectoryOptions: ParsableArguments {
    @Option(help: "The data directory.")
    var data: String?

    @Option(help: "A config file whose data setting names the data directory (the TETHERD_ environment applies too).")
    var config: String?

    func directory() throws -> String {
        if let data { return data }
        let arguments = config.map { ["--" + ConfigurationLoader.configFileKey, $0] } ?? []
        do {
            let loaded = try ConfigurationLoader(programOptions: Tetherd.programOptions)
                .load(arguments: arguments, environment: ProcessInfo.processInfo.environment)
            guard let directory = loaded.configuration.dataDirectory else { throw ValidationError("the settings keep rooms in memory only: no data directory") }
            return directory
        } catch let error as ConfigurationError {
            throw ValidationError(error.description)
        }
    }
}

/// `tetherd backup`: a consistent copy of a live database.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the data directory's database to a file, consistently, while the daemon runs and writes.",
        discussion: """
            Uses SQLite's online backup API from a read-only connection; it does not need the daemon's lock. \
            Every change acknowledged before the copy began is in it. The file is readable by its owner only \
            (mode 0600): it holds every room's state. Run it as the daemon's user \
            (sudo -u tether tetherd backup --config /etc/tether/tetherd.yaml /var/backups/tether.sqlite).

            Exit status: \(DatabaseBackup.Failure.exitStatusHelp)
            """,
        helpNames: [.long, .short])  // the root has none (serve answers --help)

    @OptionGroup var location: DataDirectoryOptions

    @Argument(help: "The backup file to write (replaced if it exists).")
    var file: String

    func run() throws {
        let directory = try location.directory()
        do {
            let summary = try DatabaseBackup.backup(dataDirectory: directory, to: file)
            print("tetherd backup: \(file): \(summary)")
        } catch {
            Tetherd.fail("backup: \(error)", exitCode: error.exitCode)
        }
    }
}

/// `tetherd restore`: a backup back into place.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Check a backup (every room loads) and make it the data directory's database.",
        discussion: """
            The daemon must be stopped (the data directory's lock is taken). Rooms come back with their epoch \
            and version, so clients resuming from the backup's versions get patches. With --replace an \
            existing database is moved aside as tether.sqlite.replaced-TIME, never deleted.

            Exit status: \(DatabaseBackup.Failure.exitStatusHelp)
            """,
        helpNames: [.long, .short])  // the root has none (serve answers --help)

    @OptionGroup var location: DataDirectoryOptions

    @Flag(help: "Move an existing database aside instead of refusing.")
    var replace = false

    @Argument(help: "The backup file (from tetherd backup).")
    var file: String

    func run() throws {
        let directory = try location.directory()
        do {
            let summary = try DatabaseBackup.restore(from: file, into: directory, replace: replace)
            print("tetherd restore: \(directory): \(summary)")
        } catch {
            Tetherd.fail("restore: \(error)", exitCode: error.exitCode)
        }
    }
}
