import ArgumentParser
import Logging
import TetherClient
import TetherTUI

/// `tether ROOM` on a terminal: the room's screen in the shell, until q, Ctrl-C or a signal.
/// `tether inspect ROOM`: the inspector, whatever the room.
@MainActor
enum Interactive {
    static func run(options: ClientOptions, room name: String, inspector: Bool = false, history: Bool = false) async throws {
        let client = TetherClient(options: options, logger: Logger(label: "tether.client"))
        do {
            try client.connect()  // only a URL that cannot work fails here; the rest is retried
        } catch {
            throw Output.failure("cannot connect to \(options.url): \(Output.describe(error))")
        }
        let context = ScreenContext(client: client, room: client.room(name))
        context.showsHistory = history
        let shell = Shell(client: client, context: context, inspector: inspector)
        let application = Application(root: shell.root, backend: ANSITerminalBackend())
        shell.attach(to: application)
        defer { context.bag.cancelAll() }
        do {
            try await application.run()  // gives the terminal back before it returns or throws
        } catch {
            await client.close()
            throw Output.failure("cannot use the terminal: \(error)")
        }
        await client.close()
    }
}
