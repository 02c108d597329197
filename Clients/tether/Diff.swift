import ArgumentParser
import TetherJSON

/// `tether diff ROOM A B`: what changed in a stored room's published state from version A to
/// version B, and who made the versions between (`GET /rooms/NAME/state?at=` twice, and the
/// history). An admin token, as for `tether show`.
struct Diff: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what changed in a room between two versions, and who changed it.",
        usage: "tether diff [--url <url>] [--token-file <file>] [--json]\n                   <room> <from> <to>",
        discussion: """
            One line per change: + added, - removed, ~ changed (old → new), from the state at \
            FROM to the state at TO as the server rebuilds them (see tether show), after a line \
            naming who made the versions between. Exits 2 when the server refuses (no admin \
            token, a version no longer kept), 1 when it cannot be reached.
            Example: tether diff vote:lunch 3 7
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The room: KIND or KIND:INSTANCE.")
    var room: String

    @Argument(help: "The version to compare from.")
    var from: Int

    @Argument(help: "The version to compare to.")
    var to: Int

    @Flag(help: "Print {room, epoch, from, to, patch} as one JSON line: patch turns FROM's state into TO's.")
    var json = false

    func validate() throws {
        guard from >= 0, to >= 0 else { throw ValidationError("versions are 0 or more") }
    }

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        let before = try await AdminCommand.ask(connection, "show \(room) at version \(from)") { try await $0.state(room: room, at: from) }.json ?? .null
        let after = try await AdminCommand.ask(connection, "show \(room) at version \(to)") { try await $0.state(room: room, at: to) }.json ?? .null
        let epoch = before["epoch"]?.stringValue ?? "?"
        guard epoch == after["epoch"]?.stringValue else {
            throw Output.failure("\(room) started anew between the two reads (epoch \(epoch), then \(after["epoch"]?.stringValue ?? "?")): run it again",
                                 code: Output.serverError)
        }
        let patch = JSONPatch.difference(from: before["state"] ?? .null, to: after["state"] ?? .null)
        if json {
            let answer: JSON = ["room": .string(room), "epoch": .string(epoch), "from": .int(from), "to": .int(to), "patch": JSONPatch.encode(patch)]
            return Output.writeLine(answer.encoded())
        }
        let (low, high) = (min(from, to), max(from, to))
        var steps: [JSON] = []
        if high > low {
            let query = [("before", String(high + 1)), ("limit", String(min(high - low, 1_000)))]
            let history = try await AdminCommand.ask(connection, "read the history of \(room)") { try await $0.history(room: room, query: query) }
            steps = (history.json?["steps"]?.arrayValue ?? []).filter { ($0["version"]?.intValue ?? 0) > low }
        }
        for line in Self.lines(room: room, from: from, to: to, old: before["state"] ?? .null, patch: patch, steps: steps) { Output.writeLine(Array(line.utf8)) }
    }

    /// The answer for people: who made the versions between, then one line per change.
    static func lines(room: String, from: Int, to: Int, old: JSON, patch: [PatchOperation], steps: [JSON]) -> [String] {
        let count = abs(to - from)
        var header = "\(room) from v\(from) to v\(to): \(count) version\(count == 1 ? "" : "s")"
        var made: [String: Int] = [:]
        for step in steps { made[History.who(step).split(separator: " ").first.map(String.init) ?? "-", default: 0] += 1 }
        if !made.isEmpty {
            header += ", made by " + made.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) (\($0.value))" }.joined(separator: ", ")
        }
        if count > steps.count && !steps.isEmpty { header += " in the last \(steps.count)" }
        guard !patch.isEmpty else { return [header, "no change"] }
        return [header] + patch.map { line($0, old: old) }
    }

    private static func line(_ operation: PatchOperation, old: JSON) -> String {
        func short(_ value: JSON) -> String {
            let text = String(decoding: value.encoded(), as: UTF8.self)
            return text.count > 60 ? String(text.prefix(59)) + "…" : text
        }
        switch operation {
        case .add(let path, let value): return "+ \(path)  \(short(value))"
        case .remove(let path): return "- \(path)"
        case .replace(let path, let value): return "~ \(path)  \(old.value(at: path).map(short) ?? "?") → \(short(value))"
        default: return "\(operation.name) \(operation.path)"
        }
    }
}
