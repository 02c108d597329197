import ArgumentParser
import Logging
import TetherClient
import TetherTUI

#if canImport(Glibc)
import Glibc
#endif

/// `tether`: the terminal client. `tether ROOM` opens the room's screen (or prints its messages
/// when there is no terminal), `tether watch ROOM` prints them, `tether send ROOM ACTION` acts once.
@main
struct Tether: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tether",
        abstract: "The Tether terminal client: live screens bound to a tetherd room, and commands for scripts.",
        usage: """
            tether [--url <url>] [--headless] <room>
            tether watch [--url <url>] [--reconnect] <room>
            tether send [--url <url>] <room> <action> [<json-args>]
            """,
        discussion: """
            Room kinds with their own screen: counter, clock, login, exchange, calculator, gallery, \
            todo. Any other room (bench, or a kind of your own) opens the live inspector. A room name \
            is KIND or KIND:INSTANCE, e.g. todo:team-a.

            Exit status: 0 success, 1 connection failure (unreachable, handshake refused, bad URL, \
            no answer), 2 the server answered with an error, 64 usage error.
            """,
        version: "0.1.0",
        subcommands: [Open.self, Watch.self, Send.self],
        defaultSubcommand: Open.self)
}

/// How to reach the server. Every subcommand takes these; options that change how a connection
/// is made (a token, TLS trust) belong here and are turned into `ClientOptions` in one place.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: "The server's WebSocket URL (ws:// or wss://).")
    var url = "ws://127.0.0.1:8080"

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for the server's hello (and, for `send`, the ack).", valueName: "seconds"))
    var timeout: Double = 10

    @Option(name: .long, help: "Log level on stderr for `watch`, `send` and headless mode (interactive screens never log).")
    var logLevel: Logger.Level = .critical

    @Option(name: .long, help: "An access token for servers started with --auth-secret (see `tetherd token`).")
    var token: String?

    @Option(name: .long, help: ArgumentHelp("Trust this CA certificate (PEM) for a wss:// server, e.g. one from Scripts/make-cert.sh.", valueName: "pem-file"))
    var ca: String?

    @Flag(name: .long, help: "Accept any wss:// certificate (tests only: encrypted, not authenticated).")
    var insecure = false

    /// The client options these flags describe.
    func clientOptions(reconnect: Bool) -> ClientOptions {
        var options = ClientOptions(url: url, token: token)
        options.reconnect.isEnabled = reconnect
        options.actionTimeout = timeoutDuration
        if let ca { options.trust = .caFile(ca) } else if insecure { options.trust = .insecure }
        return options
    }

    var timeoutDuration: Duration { .milliseconds(Int(timeout * 1000)) }

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
        if ca != nil, insecure { throw ValidationError("--ca and --insecure don't go together") }
    }
}

/// `tether [--url URL] [--headless] ROOM`
struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open a room's screen (the default command).",
        discussion: """
            Keys: Tab / Shift-Tab move the focus, Enter activates, q quits (outside text fields), \
            Ctrl-C quits anywhere. The screen keeps reconnecting while the server is down and shows \
            it in the status bar.

            Without a terminal (stdout or stdin is not a TTY), or with --headless, it behaves like \
            `tether watch`: one JSON line per message received.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Print one JSON line per received message instead of opening a screen.")
    var headless = false

    @Flag(help: "In headless mode: reconnect and resume after the connection drops, instead of exiting.")
    var reconnect = false

    @Argument(help: "The room: KIND or KIND:INSTANCE (counter, login, todo:team-a, ...).")
    var room: String

    func run() async throws {
        if headless || !ANSITerminalBackend.isAvailable {
            Output.prepareProcess(logLevel: connection.logLevel)
            try await Headless.watch(options: connection.clientOptions(reconnect: reconnect), room: room, helloTimeout: connection.timeoutDuration)
        } else {
            Output.prepareProcess(logLevel: nil)
            try await Interactive.run(options: connection.clientOptions(reconnect: true), room: room)
        }
    }
}

/// `tether watch [--url URL] ROOM`
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one JSON line per message received from a room (hello, snapshot, patches, errors).",
        discussion: """
            Each line is the server's frame as received. Exits with status 1 and a one-line error on \
            stderr when the server cannot be reached, refuses the WebSocket handshake, the URL is \
            invalid, no hello arrives within --timeout, or the join is refused. Once live, a dropped \
            connection also ends it with status 1, unless --reconnect is given: then it reconnects \
            with backoff, resumes from the last version and prints the new hello and the resumed \
            patch (or a fresh snapshot). Stops on SIGINT/SIGTERM.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Reconnect and resume after the connection drops, instead of exiting.")
    var reconnect = false

    @Argument(help: "The room: KIND or KIND:INSTANCE.")
    var room: String

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        try await Headless.watch(options: connection.clientOptions(reconnect: reconnect), room: room, helloTimeout: connection.timeoutDuration)
    }
}

/// `tether send [--url URL] ROOM ACTION [JSON-ARGS]`
struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Perform one action and print the server's answer (ack or error) as one JSON line.",
        discussion: """
            Examples:
            tether send counter increment '{"by":2}'
            tether send todo:team-a add '{"title":"milk"}'

            Exits 0 on an ack; 2 when the server answers with an error (the error frame is printed \
            on stdout, a one-line summary on stderr); 1 when the server cannot be reached or does \
            not answer within --timeout; 64 when JSON-ARGS is not a JSON object.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The room: KIND or KIND:INSTANCE.")
    var room: String

    @Argument(help: "The action's name (increment, add, press, ...).")
    var action: String

    @Argument(help: ArgumentHelp("The action's arguments: a JSON object.", valueName: "json-args"))
    var args: String?

    func validate() throws {
        _ = try parsedArgs()
    }

    func parsedArgs() throws -> JSONArgs? {
        guard let args else { return nil }
        return try JSONArgs(parsing: args)
    }

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        try await OneShot.send(
            options: connection.clientOptions(reconnect: false), room: room, action: action,
            args: parsedArgs(), timeout: connection.timeoutDuration)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
