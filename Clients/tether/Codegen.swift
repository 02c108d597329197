import ArgumentParser
import Foundation
import TetherTUI

/// `tether codegen typescript [--url URL] [--output FILE]`: types for a server's kinds.
struct Codegen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a server's room kinds as types for a client library.",
        usage: "tether codegen typescript [<options>] [--output <file>]",
        subcommands: [TypeScript.self])
}

extension Codegen {
    /// `tether codegen typescript`
    struct TypeScript: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "typescript",
            abstract: "Write TypeScript declarations of the server's kinds for tether.js.",
            usage: "tether codegen typescript [<options>] [--output <file>]",
            discussion: """
                Asks the server with `describe` and writes, per kind, <Kind>State, <Kind>Actions \
                (each action's arguments), <Kind>Room and, for a kind with a typed contract, \
                <Kind>Views, <Kind>Presence and <Kind>Error (its refusal reasons). It registers \
                the kinds with tether.d.ts, so that `client.room("counter")` is typed and \
                `room.send("increment", { by: "x" })` does not compile. Put the file beside \
                tether.js and tether.d.ts (both served by tetherd) and include it in the \
                compilation. Example:
                tether codegen typescript --output web/tether-types.d.ts
                Exits 2 when the server answers with an error, 1 when it cannot be reached.
                """)

        @OptionGroup var connection: ConnectionOptions

        @Option(name: .long, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
        var output: String?

        @Option(name: .long, help: ArgumentHelp("How the file imports tether.js (tether.d.ts beside it).", valueName: "path"))
        var tetherModule = "./tether.js"

        func validate() throws {
            guard let output else { return }
            let folder = URL(fileURLWithPath: output).deletingLastPathComponent().path
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw ValidationError("--output: there is no folder \(folder)")
            }
        }

        func run() async throws {
            Output.prepareProcess(logLevel: connection.logLevel)
            let kinds = try await Discovery.allKinds(options: connection.clientOptions(reconnect: false), timeout: connection.timeoutDuration)
            let text = TypeScriptDeclarations.generate(kinds, tetherModule: tetherModule)
            guard let output else {
                _ = TetherTUI.writeAll(Array(text.utf8), to: STDOUT_FILENO)
                return
            }
            do {
                try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            } catch {
                throw Output.failure("cannot write \(output): \((error as NSError).localizedDescription)", code: ExitCode.failure.rawValue)
            }
        }
    }
}
