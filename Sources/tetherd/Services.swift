import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TetherDemos
import TetherServer
import UnixSignals

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
