import Logging
import TetherClient
import TetherDemos
import TetherJSON
import TetherServer

/// The demo and test kinds (the counter among them) on a `TetherServer` in this process, in memory, on
/// a port of its own: a real server for the typed rooms to check their contract against.
@MainActor
final class DemoServer {
    let server: TetherServer
    let port: Int

    /// `port` 0 picks a free one; a port again starts a fresh server where a stopped one was.
    init(port: Int = 0) throws {
        var configuration = ServerConfiguration()
        configuration.port = port
        configuration.dataDirectory = nil
        configuration.presenceWindow = .zero
        configuration.shutdownGracePeriod = .milliseconds(100)
        // One socket thread: TetherTransportTests' shard tests count this process's "tether-io-"
        // threads while other suites run beside them.
        configuration.ioThreads = 1
        server = try TetherServer(configuration: configuration, kinds: Demos.kinds + Demos.testKinds, logger: Logger(label: "demo") { _ in SwiftLogNoOpLogHandler() })
        self.port = try server.start()
    }

    var url: String { "ws://127.0.0.1:\(port)" }

    func stop() async { await server.shutdown() }

    /// A connected client that reconnects quickly.
    func client(presence: JSON? = nil) async throws -> TetherClient {
        var options = ClientOptions(url: url)
        options.reconnect.initialDelay = .milliseconds(20)
        options.reconnect.maximumDelay = .milliseconds(100)
        options.presence = presence
        let client = TetherClient(options: options)
        try client.connect()
        try await client.waitUntilConnected()
        return client
    }
}
