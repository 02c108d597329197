import ArgumentParser
import TetherJSON

/// `tether fork ROOM@V NEW`: a new room of the same kind whose state is ROOM's at version V
/// (`POST /rooms/NAME/fork`). An admin token, as for `tether history`.
struct Fork: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a new room from a room's state at an earlier version.",
        usage: "tether fork [--url <url>] [--token-file <file>] <room>@<v> <new-room>",
        discussion: """
            The new room is of the same kind and starts from the room's published and stored \
            state at version V, with a history of its own; the room itself is not touched. \
            Use it to try a fix or preview a change. Any version tether history lists can be \
            forked. Exits 2 when the server refuses (no admin token, a version no longer \
            kept, a new name in use), 1 when it cannot be reached.
            Example: tether fork vote:lunch@12 vote:lunch-replay
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The room and the version: ROOM@VERSION.")
    var source: String

    @Argument(help: "The new room: KIND or KIND:INSTANCE, of the same kind.")
    var target: String

    func validate() throws {
        _ = try Self.split(source)
    }

    /// `vote:lunch@12` → ("vote:lunch", 12); the last `@` separates them.
    static func split(_ text: String) throws -> (room: String, version: Int) {
        guard let at = text.lastIndex(of: "@"), at != text.startIndex, let version = Int(text[text.index(after: at)...]), version >= 0 else {
            throw ValidationError("name the room and the version as ROOM@VERSION, e.g. vote:lunch@12")
        }
        return (String(text[..<at]), version)
    }

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        let (room, version) = try Self.split(source)
        let answer = try await AdminCommand.ask(connection, "fork \(room) at version \(version)", success: 201) {
            try await $0.fork(room: room, at: version, into: target)
        }
        let epoch = answer.json?["epoch"]?.stringValue ?? "?"
        Output.writeLine(Array("\(target) made from \(room) at v\(version) (epoch \(epoch))".utf8))
    }
}
