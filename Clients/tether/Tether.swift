import ArgumentParser
import Logging
import TetherClient
import TetherJSON
import TetherProtocol
import TetherTUI

/// `tether`: the terminal client. `tether ROOM` opens the room's screen (or prints its messages
/// when there is no terminal), `tether inspect ROOM` the inspector, `tether watch ROOM...` prints
/// messages or states, `tether send ROOM ACTION` acts once, `tether kinds` and
/// `tether describe KIND` show what the server's rooms do, `tether codegen typescript` writes
/// their types for tether.js, `tether rooms` lists (and
/// `tether rooms delete NAME` deletes) the server's rooms.
@main
struct Tether: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tether",
        abstract: "The Tether terminal client: live screens bound to a tetherd room, and commands for scripts.",
        usage: """
            tether [--url <url>] [--name <name>] [--headless] <room>
            tether inspect [--url <url>] <room>
            tether watch [--url <url>] [--state] [--count <n> | --once]
                         [--since <epoch>:<version>] <room> ...
            tether send [--url <url>] <room> <action> [<json-args>]
            tether kinds [--url <url>] [--json]
            tether describe [--url <url>] [--json] <kind>
            tether codegen typescript [--url <url>] [--output <file>]
            tether rooms [--url <url>] [--token-file <file>] [--json]
            tether rooms delete [--url <url>] [--token-file <file>] <room>
            tether webhooks [list | retry NAME | test NAME] [--url <url>]
                            [--token-file <file>]
            """,
        discussion: """
            Room kinds with their own screen: counter, clock, login, exchange, calculator, gallery, \
            todo, vote. Any other room (bench, or a kind of your own) opens the live inspector, which also \
            sends actions; `tether inspect ROOM` opens it for any room. A room name is KIND or \
            KIND:INSTANCE, e.g. todo:team-a.

            The connection options (--url, --name, --token, --timeout, ...: `tether open --help` \
            lists them) go before or after the subcommand: `tether --name kim inspect counter`.

            Environment: TETHER_URL (the server, instead of --url) and TETHER_TOKEN (the access \
            token, instead of --token or --token-file); a flag beats its variable.

            Exit status: 0 success, 1 connection failure (unreachable, handshake refused, bad URL, \
            no answer; an action was not sent), 2 the server answered with an error (a refused \
            join, an action's error that says it was not applied, a refused room administration), \
            3 an action may or may not have been applied (sent, and --timeout ended the wait \
            before its answer, or the server says it no longer knows: stale_action), 64 usage error.
            """,
        version: "0.1.0",
        subcommands: [Open.self, Inspect.self, Watch.self, Send.self, Kinds.self, Describe.self, Codegen.self, Rooms.self, History.self, Show.self, Diff.self, Export.self, Fork.self, Webhooks.self],
        defaultSubcommand: Open.self)

    static func main() async {
        await main(withSubcommandFirst(Array(CommandLine.arguments.dropFirst())))
    }

    /// `tether --name kim inspect counter` read as `tether inspect --name kim counter`:
    /// ArgumentParser takes a subcommand's options only after its name. After leading options,
    /// the first subcommand name that parses when moved to the front goes there. Otherwise the
    /// arguments stay as they are if they parse so (`--name send counter` names you "send"),
    /// else the first subcommand name moves anyway, so its own error (`--timeout 0`) is reported.
    static func withSubcommandFirst(_ arguments: [String]) -> [String] {
        guard arguments.first?.hasPrefix("-") == true else { return arguments }
        let names = Set(configuration.subcommands.map { $0._commandName })
        let candidates = arguments.indices.dropFirst().filter { names.contains(arguments[$0]) }.map { index in
            [arguments[index]] + arguments[..<index] + arguments[(index + 1)...]
        }
        if let moved = candidates.first(where: { (try? parseAsRoot($0)) != nil }) { return moved }
        if (try? parseAsRoot(arguments)) != nil { return arguments }
        return candidates.first ?? arguments
    }
}

/// `tether [--url URL] [--headless] ROOM`
struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open a room's screen (the default command).",
        usage: "tether [open] [<options>] [--headless [--reconnect]] <room>",
        discussion: """
            Keys: Tab / Shift-Tab move the focus, Enter activates, q quits (outside text fields), \
            Ctrl-C quits anywhere; each screen shows its own keys. The screen keeps reconnecting \
            while the server is down and shows it in the status bar; an action pressed meanwhile is \
            queued and sent when the connection is back; the line above the key help says how \
            many presses are waiting.

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
            try await Headless.watch(options: connection.clientOptions(reconnect: reconnect), rooms: [room], helloTimeout: connection.timeoutDuration)
        } else {
            Output.prepareProcess(logLevel: nil)
            try await Interactive.run(options: connection.clientOptions(reconnect: true), room: room)
        }
    }
}

/// `tether inspect [--url URL] ROOM`
struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open the live inspector for any room, demo rooms included: its state as a JSON tree, its actions, and a line to send one.",
        usage: "tether inspect [<options>] <room>",
        discussion: """
            The state is shown as an indented JSON tree; rows the last patch touched are marked ». \
            The Actions box lists the room's actions with their argument types, as the server \
            describes them; Enter on one fills it in below. Type ACTION {"arg": value} and press \
            Enter to send it: the ack's version or the server's error is shown. With \
            --history, a History box lists the room's last versions with who made them \
            (a stored room, and a token with the admin claim), kept current as they come.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The room: KIND or KIND:INSTANCE.")
    var room: String

    @Flag(help: "Show who made the room's last versions, live (an admin token).")
    var history = false

    func run() async throws {
        guard ANSITerminalBackend.isAvailable else {
            throw Output.failure("tether inspect needs a terminal; use `tether watch` in scripts", code: ExitCode.validationFailure.rawValue)
        }
        Output.prepareProcess(logLevel: nil)
        try await Interactive.run(options: connection.clientOptions(reconnect: true), room: room, inspector: true, history: history)
    }
}

/// `tether watch [--url URL] [--state] [--count N | --once] [--since EPOCH:VERSION] ROOM...`
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the messages (or, with --state, the state) of one or more rooms, one JSON line each.",
        usage: """
            tether watch [<options>] [--reconnect] [--state] [--count <n> | --once]
                         [--since <epoch>:<version>] <room> ...
            """,
        discussion: """
            Without --state each line is the server's frame as received: the hello, then each \
            room's snapshot and patches (each frame names its room). With --state each line is \
            {"room": R, "epoch": E, "version": V, "state": {...}}: the room's whole state after each \
            snapshot or patch, e.g. `tether watch --state counter | jq .state.count`.

            --count N exits 0 after N snapshots and patches (hellos are printed, not counted); \
            --once exits 0 once every room has printed one (with --state: each room's current \
            state). --since EPOCH:VERSION resumes a single room after that version, so only later \
            patches are printed; the server sends a snapshot instead when it no longer has them. \
            It also takes a line of --state as printed: its epoch and version.

            Exits with status 1 and a one-line error on stderr when the server cannot be reached, \
            refuses the WebSocket handshake, the URL is invalid, or no hello arrives within \
            --timeout; with status 2 when the server refuses to join a room (unknown room, \
            unauthorized, too many rooms) or deletes a watched room (room_deleted), after printing \
            its error frame. Once live, a dropped \
            connection also ends it with status 1, unless --reconnect is given: then it reconnects \
            with backoff, resumes from the last version and prints the new hello and the resumed \
            patch (or a fresh snapshot). Stops on SIGINT/SIGTERM with status 0.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Reconnect and resume after the connection drops, instead of exiting.")
    var reconnect = false

    @Flag(help: "Print each room's rebuilt state after every snapshot or patch instead of the frames.")
    var state = false

    @Option(help: ArgumentHelp("Exit after this many snapshots and patches.", valueName: "n"))
    var count: Int?

    @Flag(help: "Exit once every room has printed one snapshot or patch.")
    var once = false

    @Option(help: ArgumentHelp("Resume after this point of the room's history (one room only): EPOCH:VERSION, or a line of --state.", valueName: "epoch:version"))
    var since: String?

    @Argument(help: "The rooms: KIND or KIND:INSTANCE, one or more.")
    var rooms: [String]

    func validate() throws {
        guard !rooms.isEmpty else { throw ValidationError("name at least one room") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if count != nil, once { throw ValidationError("--count and --once don't go together") }
        if since != nil {
            guard rooms.count == 1 else { throw ValidationError("--since resumes one room; name only one") }
            guard !state else { throw ValidationError("--since and --state don't go together: the state is unknown until a snapshot") }
            _ = try resumePoint()
        }
    }

    /// --since as a resume point: EPOCH:VERSION, or a line of `--state` (a JSON object whose
    /// epoch and version are taken; its room, when it names one, must be the room watched).
    func resumePoint() throws -> ResumePoint? {
        guard let since else { return nil }
        if since.hasPrefix("{") {
            guard let line = try? JSONParser().parse(since), let epoch = line["epoch"]?.stringValue,
                  let version = line["version"]?.intValue, version >= 0 else {
                throw ValidationError("--since: this is not a line of `tether watch --state` (it needs \"epoch\" and \"version\")")
            }
            if let room = line["room"]?.stringValue, room != rooms.first {
                throw ValidationError("--since: that line is about \(room), not \(rooms.first ?? "the room watched")")
            }
            return ResumePoint(epoch: epoch, version: version)
        }
        guard let colon = since.lastIndex(of: ":"), let version = Int(since[since.index(after: colon)...]), version >= 0,
              colon != since.startIndex else {
            throw ValidationError("--since must be EPOCH:VERSION, e.g. k3j9x2pq:17 (as `tether watch --state` prints them)")
        }
        return ResumePoint(epoch: String(since[..<colon]), version: version)
    }

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        let mode = Headless.Mode(printsState: state, limit: count.map { .messages($0) } ?? (once ? .oncePerRoom : nil), since: try resumePoint())
        try await Headless.watch(options: connection.clientOptions(reconnect: reconnect), rooms: rooms, helloTimeout: connection.timeoutDuration, mode: mode)
    }
}

/// `tether send [--url URL] ROOM ACTION [JSON-ARGS]`
struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Perform one action and print the server's answer (ack or error) as one JSON line.",
        usage: "tether send [<options>] <room> <action> [<json-args>]",
        discussion: """
            Examples:
            tether send counter increment '{"by":2}'
            tether send todo:team-a add '{"title":"milk"}'

            With a token the room is joined first (the server takes actions only on joined rooms). \
            Exits 0 on an ack; 1 when the server cannot be reached (within --timeout): the action \
            was not sent; 2 when the server answers with an error that says the action was not \
            applied, or refuses the join (the error frame is printed on stdout, a one-line summary \
            on stderr); 3 when the action may or may not have been applied: it was sent and \
            --timeout ended the wait before its answer (after a dropped connection, or an answer \
            that settles nothing, it is sent again under its number, so it runs once), or the \
            server's error says it no longer knows (stale_action; the frame is printed too); 64 \
            when JSON-ARGS is not a JSON object. With status 2 or 3 the summary on stderr ends with "not applied" or "it may \
            or may not have been applied".
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

/// `tether kinds [--url URL] [--json]`
struct Kinds: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the server's room kinds: name, scope and actions.",
        usage: "tether kinds [<options>] [--json]",
        discussion: "Asks the server with the protocol's `describe` request. Exits 2 when the server answers with an error (a server too old to know `describe`), 1 when it cannot be reached.")

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Print the server's description as one JSON line.")
    var json = false

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        try await Discovery.kinds(options: connection.clientOptions(reconnect: false), timeout: connection.timeoutDuration, json: json)
    }
}

/// `tether describe [--url URL] [--json] KIND`
struct Describe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show one room kind: its scope, and each action with its argument fields and their types.",
        usage: "tether describe [<options>] [--json] <kind>",
        discussion: """
            A field marked "optional" may be left out. Example:
            tether describe todo
            Exits 2 when the server answers with an error (unknown_room for an unknown kind), 1 when \
            it cannot be reached.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Print the server's description as one JSON line.")
    var json = false

    @Argument(help: "The kind (counter, todo, ...); a room name works too: todo:team-a describes todo.")
    var kind: String

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        try await Discovery.describe(kind: kind, options: connection.clientOptions(reconnect: false), timeout: connection.timeoutDuration, json: json)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
