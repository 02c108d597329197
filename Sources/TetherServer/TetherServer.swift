import Logging
import Synchronization
import TetherJSON
import TetherState
import TetherTransport

/// The Tether server: rooms of authoritative ViewModels, served over WebSockets.
///
/// ```swift
/// let server = TetherServer(configuration: .init(), kinds: Demos.kinds + [myKind])
/// let port = try server.start()
/// ...
/// await server.shutdown()
/// ```
public final class TetherServer: Sendable {
    public static let version = "0.1.0"

    public let configuration: ServerConfiguration
    private let transport: WebSocketServer
    private let hub: SessionHub
    private let store: RoomStore?
    private let metrics = ServerMetrics()
    private let logger: Logger
    private let housekeeping = Mutex<Task<Void, Never>?>(nil)

    /// Takes the data directory's lock and opens its database; throws when either fails.
    public init(configuration: ServerConfiguration = .init(), kinds: [ViewModelKind], logger: Logger = Logger(label: "tetherd")) throws(StartupError) {
        self.configuration = configuration
        if let directory = configuration.dataDirectory {
            store = try RoomStore(directory: directory, durability: configuration.durability, historyLimit: configuration.historyMaxPatches, logger: logger)
        } else {
            store = nil
        }
        self.logger = logger
        var transportConfiguration = WebSocketServerConfiguration()
        transportConfiguration.host = configuration.host
        transportConfiguration.port = configuration.port
        transportConfiguration.maxMessageBytes = configuration.maxFrameBytes
        transportConfiguration.maxConnections = configuration.maxConnections
        transportConfiguration.tls = configuration.tls
        transportConfiguration.pingInterval = configuration.pingInterval
        transportConfiguration.idleTimeout = configuration.peerTimeout
        transportConfiguration.handshakeTimeout = configuration.handshakeTimeout
        transport = WebSocketServer(configuration: transportConfiguration, logger: logger)
        hub = SessionHub(configuration: configuration, kinds: kinds, store: store, metrics: metrics, logger: logger)
        hub.transport = transport
    }

    /// Listens and serves; returns the bound port (the chosen one when configured with 0).
    @discardableResult
    public func start() throws(StartupError) -> Int {
        let port: Int
        do {
            port = try transport.start(delegate: hub)
        } catch {
            let (host, port) = (configuration.host, configuration.port)
            switch error as? TransportError {
            case .addressInUse?: throw .addressInUse(host: host, port: port)
            case .tls(let reason)?: throw .configuration("TLS: \(reason)")
            case .cannotListen(let reason)?, .startFailed(let reason)?: throw .cannotListen(host: host, port: port, reason)
            default: throw .cannotListen(host: host, port: port, "\(error)")
            }
        }
        let hub = self.hub
        let task = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                hub.post { $0.sweep() }
            }
        }
        housekeeping.withLock { $0 = task }
        return port
    }

    /// Graceful stop: refuses new connections, sends what is queued, closes every client with
    /// 1001, stops the rooms. Returns when the socket thread is gone.
    public func shutdown() async {
        housekeeping.withLock { task in
            task?.cancel()
            task = nil
        }
        await transport.shutdownAsync(deadline: configuration.shutdownGracePeriod * 2)
        for room in hub.allRoomsAfterShutdown() { await room.stop() }
        store?.close()
    }

    /// The Prometheus exposition text, as `GET /metrics` serves it.
    public func metricsText() -> String {
        String(decoding: metrics.render(), as: UTF8.self)
    }
}
