import ArgumentParser
import Foundation
import TetherJSON

/// `tether export ROOM --from V [--to W]`: a stored room's steps between two versions, with the
/// state at the first, as a file `TestRoom.replay` runs against the ViewModel's code
/// (`GET /rooms/NAME/export`). An admin token, as for `tether history`.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the steps between two versions of a room, to replay them as a test.",
        usage: "tether export [--url <url>] [--token-file <file>] <room> --from <v>\n                     [--to <w>] [--output <file>]",
        discussion: """
            The file holds the room's published and stored state at FROM, then each step \
            after it up to TO (default: the room's version): what made it (an action with its \
            arguments and viewer, a timer, presence), the time and random seed it read, and \
            its patch. TestRoom.replay(Model.self, file) runs it against the ViewModel's code \
            and names the first step that differs. Only kinds that keep their arguments in \
            history can be exported (ViewModelKind.keepingArgumentsInHistory()); the file \
            holds the ViewModel's stored state too. Exits 2 when the server refuses, 1 when it \
            cannot be reached.
            Example: tether export vote:lunch --from 0 --output vote-bug.json
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The room: KIND or KIND:INSTANCE.")
    var room: String

    @Option(help: "The version to start from (its state is the replay's start).")
    var from: Int

    @Option(help: "The last version (default: the room's).")
    var to: Int?

    @Option(help: "Write to this file (default: standard output).")
    var output: String?

    func validate() throws {
        guard from >= 0 else { throw ValidationError("--from is a version: 0 or more") }
        if let to, to < from { throw ValidationError("--to must be at least --from") }
    }

    func run() async throws {
        Output.prepareProcess(logLevel: connection.logLevel)
        let answer = try await AdminCommand.ask(connection, "export \(room)") { try await $0.export(room: room, from: from, to: to) }
        let text = Show.pretty(answer.json ?? .null) + "\n"
        guard let output else {
            for line in text.split(separator: "\n") { Output.writeLine(Array(line.utf8)) }
            return
        }
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: output))
        } catch {
            throw Output.failure("cannot write \(output): \(error.localizedDescription)")
        }
        let steps = answer.json?["steps"]?.arrayValue?.count ?? 0
        Output.writeLine(Array("\(room): \(steps) step\(steps == 1 ? "" : "s") after v\(from) written to \(output)".utf8))
    }
}
