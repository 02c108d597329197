import ArgumentParser
import Foundation
import TetherClient
import TetherJSON

/// `tether history ROOM`: who made each kept version of a stored room, newest first
/// (`GET /rooms/NAME/history`). An admin token, as for `tether rooms`.
struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show who changed a room: each kept version with when, who, what and the paths it changed.",
        discussion: """
            Newest first. WHO is the viewer (a token's sub, a claimed user, or an anonymous \
            session's id) with the client and number of a numbered action; WHAT is the action \
            (its arguments as a digest unless the kind keeps them), a timer, or the ViewModel's \
            reaction to presence. A stored room keeps its last versions (tetherd \
            --history-max-patches); older ones and a server without --data have none. A server \
            with token secrets needs a token with the admin claim. Exits 2 when the server \
            refuses, 1 when it cannot be reached.
            Example: tether history vote:lunch --viewer alice
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The room: KIND or KIND:INSTANCE.")
    var room: String

    @Option(help: "Only the versions this viewer made.")
    var viewer: String?

    @Option(help: "Only the versions this action made.")
    var action: String?

    @Option(help: "At most this many versions (1 to 1000).")
    var limit = 20

    @Option(help: "Only versions before this one (the next page).")
    var before: Int?

    @Flag(help: "Print the server's answer as one JSON line: {room, epoch, version, oldest, steps: [...]}.")
    var json = false

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        var query = [("limit", String(limit))]
        if let viewer { query.append(("viewer", viewer)) }
        if let action { query.append(("action", action)) }
        if let before { query.append(("before", String(before))) }
        let answer = try await AdminCommand.ask(connection, "read the history of \(room)") { try await $0.history(room: room, query: query) }
        if json { return Output.writeLine(answer.body) }
        for line in Self.lines(answer.json ?? .null) { Output.writeLine(Array(line.utf8)) }
    }

    /// The answer for people: one line per version, then where the kept history starts.
    static func lines(_ answer: JSON, timeZone: TimeZone = .current) -> [String] {
        let steps = answer["steps"]?.arrayValue ?? []
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        formatter.timeZone = timeZone
        let rows = steps.map { step -> [String] in
            let when = step["at"]?.intValue.map { formatter.string(from: Date(timeIntervalSince1970: TimeInterval($0))) } ?? "-"
            let ops = step["ops"]?.intValue ?? 0
            let paths = (step["paths"]?.arrayValue ?? []).compactMap(\.stringValue)
            let more = ops > paths.count ? " …" : ""
            return ["v\(step["version"]?.intValue ?? 0)", when, who(step), what(step),
                    "\(ops) op\(ops == 1 ? "" : "s")" + (paths.isEmpty ? "" : "  " + paths.joined(separator: " ") + more)]
        }
        let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines = rows.map { row in
            row.enumerated().map { column, text in column < 4 ? text.padding(toLength: widths[column], withPad: " ", startingAt: 0) : text }
                .joined(separator: "  ")
        }
        let room = answer["room"]?.stringValue ?? "?"
        let oldest = answer["oldest"]?.intValue ?? 0
        let version = answer["version"]?.intValue ?? 0
        lines.append(steps.isEmpty ? "\(room): no kept version matches (kept: v\(oldest) to v\(version))"
                                   : "\(room) is at v\(version); versions from v\(oldest) are kept")
        return lines
    }

    static func who(_ step: JSON) -> String {
        guard let viewer = step["viewer"]?.stringValue else { return "-" }
        guard let client = step["client"]?.stringValue, let seq = step["seq"]?.intValue else { return viewer }
        return "\(viewer) (\(client)#\(seq))"
    }

    static func what(_ step: JSON) -> String {
        let action = step["action"]?.stringValue ?? "?"
        let args = step["args"].map { " " + String(decoding: $0.encoded(), as: UTF8.self) } ?? step["argsDigest"].flatMap(\.stringValue).map { " args#\($0)" } ?? ""
        switch step["cause"]?.stringValue {
        case "action": return action + args
        case "refused": return "\(action)\(args) (refused)"
        case "timer": return "timer \(step["timer"]?.intValue ?? 0)"
        case "presence": return "presence"
        case "viewers": return "viewers"
        default: return "not recorded"
        }
    }
}

/// `tether show ROOM --at V`: a stored room's published state at an earlier version
/// (`GET /rooms/NAME/state?at=V`). An admin token, as for `tether history`.
struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a room's state at an earlier version, as its clients saw it then.",
        usage: "tether show [--url <url>] [--token-file <file>] [--json] <room> --at <v>",
        discussion: """
            The server rebuilds it from a snapshot and the patches after it: any version that \
            `tether history` lists, back to the oldest snapshot kept. Per-viewer values and the \
            ViewModel's stored state are never shown. Exits 2 when the server refuses (no admin \
            token, a version no longer kept), 1 when it cannot be reached.
            Example: tether show vote:lunch --at 12
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The room: KIND or KIND:INSTANCE.")
    var room: String

    @Option(help: "The version.")
    var at: Int

    @Flag(help: "Print the server's answer as one JSON line: {room, kind, epoch, version, state}.")
    var json = false

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        let answer = try await AdminCommand.ask(connection, "show \(room) at version \(at)") { try await $0.state(room: room, at: at) }
        if json { return Output.writeLine(answer.body) }
        Output.writeLine(Array("\(room) at v\(at) (epoch \(answer.json?["epoch"]?.stringValue ?? "?"))".utf8))
        // Line by line: writeLine puts a JSON text that spans lines back onto one.
        for line in Self.pretty(answer.json?["state"] ?? .null).split(separator: "\n") { Output.writeLine(Array(line.utf8)) }
    }

    /// Two-space indented JSON, keys sorted.
    static func pretty(_ json: JSON, indent: String = "") -> String {
        let inner = indent + "  "
        switch json {
        case .object(let fields) where !fields.isEmpty:
            let members = fields.keys.sorted().map { key in
                inner + String(decoding: JSON.string(key).encoded(), as: UTF8.self) + ": " + pretty(fields[key] ?? .null, indent: inner)
            }
            return "{\n" + members.joined(separator: ",\n") + "\n" + indent + "}"
        case .array(let items) where !items.isEmpty:
            return "[\n" + items.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        default:
            return String(decoding: json.encoded(), as: UTF8.self)
        }
    }
}
