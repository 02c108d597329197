import ArgumentParser
import Dispatch
import Foundation
import Logging
import TetherDemos
import TetherServer

/// `tetherd`: the Tether server daemon with the demo ViewModels built in.
@main
struct Tetherd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tetherd",
        abstract: "Serve MVVM ViewModels over WebSockets: every change becomes a JSON Patch broadcast to subscribers.",
        discussion: "Rooms: \(Demos.kinds.map(\.name).joined(separator: ", ")). Protocol: docs/PROTOCOL.md.",
        version: TetherServer.version)

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (the chosen port is printed).")
    var port = 8080

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Per room: recent patches kept for resuming clients.")
    var historyMaxPatches = ServerConfiguration().historyMaxPatches

    @Option(help: "Per room: bytes of recent patches kept for resuming clients.")
    var historyMaxBytes = ServerConfiguration().historyMaxBytes

    @Option(help: "Largest accepted frame; larger ones close the connection with 1009.")
    var maxFrameBytes = ServerConfiguration().maxFrameBytes

    @Option(help: "Most simultaneous connections.")
    var maxConnections = ServerConfiguration().maxConnections

    @Option(help: "Per connection: queued bytes before a slow client's patches are replaced by a snapshot.")
    var sendQueueBytes = ServerConfiguration().sendQueueBytes

    @Option(help: "Seconds a shared room with no subscribers stays in memory.")
    var idleRoomSeconds = 60

    @Option(help: "Seconds a client may leave its queue undrained before it is closed with 1008.")
    var stuckClientSeconds = 60

    @Flag(help: .hidden)
    var testKinds = false

    mutating func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "tetherd")

        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.historyMaxPatches = historyMaxPatches
        configuration.historyMaxBytes = historyMaxBytes
        configuration.maxFrameBytes = maxFrameBytes
        configuration.maxConnections = maxConnections
        configuration.sendQueueBytes = sendQueueBytes
        configuration.idleRoomTimeout = .seconds(idleRoomSeconds)
        configuration.stuckClientTimeout = .seconds(stuckClientSeconds)

        let kinds = Demos.kinds + (testKinds ? Demos.testKinds : [])
        let server = TetherServer(configuration: configuration, kinds: kinds, logger: logger)
        let boundPort: Int
        do {
            boundPort = try server.start()
        } catch {
            throw ValidationError("cannot start: \(error)")
        }
        // One line on stdout, written at once (stdout may be a pipe that scripts read).
        FileHandle.standardOutput.write(Data("tetherd listening on ws://\(host):\(boundPort)\n".utf8))

        await Self.waitForTerminationSignal()
        logger.info("shutting down")
        await server.shutdown()
        logger.info("stopped")
    }

    /// Returns on the first SIGINT or SIGTERM.
    static func waitForTerminationSignal() async {
        signal(SIGPIPE, SIG_IGN)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = SignalOnce(continuation)
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { once.fire() }
                source.resume()
                once.keep(source)
            }
        }
    }
}

/// Resumes the continuation once, whichever signal comes first; keeps the sources alive.
private final class SignalOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Void, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

    func keep(_ source: any DispatchSourceSignal) {
        lock.withLock { sources.append(source) }
    }

    func fire() {
        let pending = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            defer { continuation = nil }
            return continuation
        }
        pending?.resume()
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
