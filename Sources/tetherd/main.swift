import ArgumentParser
import Dispatch
import Foundation
import Logging
import TetherDemos
import TetherServer
import TetherTransport

/// `tetherd`: the Tether server daemon with the demo ViewModels built in.
@main
struct Tetherd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tetherd",
        abstract: "Serve MVVM ViewModels over WebSockets: every change becomes a JSON Patch broadcast to subscribers.",
        version: TetherServer.version,
        subcommands: [Serve.self, MintToken.self],
        defaultSubcommand: Serve.self)
}

/// `tetherd [serve]`: runs the daemon.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the daemon (the default command).",
        discussion: "Rooms: \(Demos.kinds.map(\.name).joined(separator: ", ")). Protocol: docs/PROTOCOL.md.")

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

    @Option(help: "Directory for durable shared rooms (SQLite); created if missing.")
    var data = "data"

    @Flag(help: "Keep rooms in memory only: nothing survives a restart.")
    var memoryOnly = false

    @Option(help: "What an ack promises: strict (fsynced), batch (survives a daemon crash), none (may lose recent acks).")
    var durability: Durability = .batch

    @Option(help: "TLS certificate (PEM) to serve wss:// (with --tls-key).")
    var tlsCert: String?

    @Option(help: "TLS private key (PEM).")
    var tlsKey: String?

    @Option(help: "Shared secret for HS256 access tokens; joins then need a valid token.")
    var authSecret: String?

    @Option(help: "File holding the token secret (instead of --auth-secret).")
    var authSecretFile: String?

    @Flag(help: "Allow listening on a non-loopback address without --auth-secret.")
    var allowAnonymous = false

    @Option(help: "Per connection: actions per second (token bucket; excess gets rate_limited).")
    var maxActionsPerSecond = ServerConfiguration().maxActionsPerSecond

    @Option(help: "Per connection: the token bucket's burst size.")
    var actionBurst = ServerConfiguration().actionBurst

    @Option(help: "Rooms one connection may join at once.")
    var maxRoomsPerConnection = ServerConfiguration().maxRoomsPerConnection

    @Option(help: "Live rooms in the whole server (shared and per-session).")
    var maxRooms = ServerConfiguration().maxRooms

    @Option(help: "Simultaneous connections from one IP address.")
    var maxConnectionsPerIp = ServerConfiguration().maxConnectionsPerIP

    @Option(help: "Seconds a connection has to complete its WebSocket handshake.")
    var handshakeTimeoutSeconds = 10

    @Option(help: "Seconds of silence before the server pings a peer.")
    var pingSeconds = 20

    @Option(help: "Seconds without an answer after which a peer counts as dead and is dropped.")
    var peerTimeoutSeconds = 60

    @Flag(help: .hidden)
    var testKinds = false

    func validate() throws {
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        if authSecret != nil, authSecretFile != nil { throw ValidationError("give --auth-secret or --auth-secret-file, not both") }
        if authSecret == nil, authSecretFile == nil, !allowAnonymous, !Self.isLoopback(host) {
            throw ValidationError("refusing to listen on \(host) without --auth-secret: anyone could join every room. Add --auth-secret (or --allow-anonymous).")
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    func authority() throws -> TokenAuthority? {
        if let authSecret { return TokenAuthority(secret: Array(authSecret.utf8)) }
        guard let authSecretFile else { return nil }
        guard let contents = FileManager.default.contents(atPath: authSecretFile) else {
            throw ValidationError("cannot read --auth-secret-file \(authSecretFile)")
        }
        let secret = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw ValidationError("--auth-secret-file \(authSecretFile) is empty") }
        return TokenAuthority(secret: Array(secret.utf8))
    }

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
        configuration.dataDirectory = memoryOnly ? nil : data
        configuration.durability = durability
        if let tlsCert, let tlsKey { configuration.tls = TLSFiles(certificatePath: tlsCert, privateKeyPath: tlsKey) }
        configuration.auth = try authority()
        configuration.maxActionsPerSecond = maxActionsPerSecond
        configuration.actionBurst = actionBurst
        configuration.maxRoomsPerConnection = maxRoomsPerConnection
        configuration.maxRooms = maxRooms
        configuration.maxConnectionsPerIP = maxConnectionsPerIp
        configuration.handshakeTimeout = .seconds(handshakeTimeoutSeconds)
        configuration.pingInterval = .seconds(pingSeconds)
        configuration.peerTimeout = .seconds(peerTimeoutSeconds)

        let kinds = Demos.kinds + (testKinds ? Demos.testKinds : [])
        let server: TetherServer
        let boundPort: Int
        do {
            server = try TetherServer(configuration: configuration, kinds: kinds, logger: logger)
            boundPort = try server.start()
        } catch {
            FileHandle.standardError.write(Data("tetherd: \(error)\n".utf8))
            throw ExitCode(error.exitCode)
        }
        // One line on stdout, written at once (stdout may be a pipe that scripts read).
        FileHandle.standardOutput.write(Data("tetherd listening on \(tlsCert == nil ? "ws" : "wss")://\(host):\(boundPort)\n".utf8))

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

/// `tetherd token`: mints an access token for local use.
struct MintToken: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print an HS256 access token for the daemon's --auth-secret.",
        discussion: "Example: tetherd token --secret s3cret --subject alice --rooms 'todo:*,counter' --ttl 3600")

    @Option(help: "The daemon's --auth-secret.")
    var secret: String

    @Option(help: "Who the token is for (the sub claim).")
    var subject = "local"

    @Option(help: "Comma-separated room patterns: a name, or a prefix ending in * (todo:*, *).")
    var rooms: String

    @Option(help: "Seconds until the token expires.")
    var ttl = 3600

    func run() {
        let claims = AccessClaims(
            subject: subject, expires: Int(Date().timeIntervalSince1970) + ttl,
            rooms: rooms.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        print(TokenAuthority(secret: Array(secret.utf8)).mint(claims))
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
extension Durability: ExpressibleByArgument {}
