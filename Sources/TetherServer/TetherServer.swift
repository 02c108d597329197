import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TetherState
import TetherTransport

/// The Tether server: rooms of authoritative ViewModels, served over WebSockets. A
/// swift-service-lifecycle `Service`, so it runs in a `ServiceGroup` beside other services and
/// shuts down gracefully with it.
///
/// ```swift
/// let server = try TetherServer(configuration: .init(), kinds: Demos.kinds + [myKind])
/// try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
/// ```
public final class TetherServer: Service, Sendable {
    public static let version = "0.1.0"

    /// The running settings; a reload (`reload(_:)`) replaces the reloadable ones.
    public var configuration: ServerConfiguration { running.withLock { $0 } }
    let running: Mutex<ServerConfiguration>
    let transport: WebSocketServer
    /// The rooms, their administration and housekeeping; every hub uses it.
    let rooms: RoomService
    /// One hub per socket shard, in shard order: the connections.
    let hubs: [SessionHub]
    private let bridges: [TransportBridge]
    private let store: RoomStore?
    private let cluster: ClusterNode?
    let logger: Logger
    private let boundPort = Mutex<Int?>(nil)
    /// Fetches the identity provider's keys while the server runs (with `jwks-url`).
    private let jwksRefresher: JWKSRefresher?
    /// Sends the rooms' events to webhook endpoints (idle without any).
    let webhookDeliverer: WebhookDeliverer
    /// A cluster node's webhook outbox (the stream; delivered by one node at a time).
    private let clusterWebhooks: ClusterWebhookOutbox?
    private let jwksTask = Mutex<Task<Void, Never>?>(nil)
    /// The application's kinds by name, for settings that name them (`room-expiry`).
    let kindScopes: [String: RoomScope]

    /// Why `configuration`'s room-expiry does not fit `kinds`, or nil: each kind it names must
    /// exist and be shared (a per-session room is never stored: there is nothing to expire).
    public static func roomExpiryProblem(in configuration: ServerConfiguration, kinds: [ViewModelKind]) -> String? {
        roomExpiryProblem(in: configuration, kinds: Dictionary(kinds.map { ($0.name, $0.scope) }, uniquingKeysWith: { first, _ in first }))
    }

    static func roomExpiryProblem(in configuration: ServerConfiguration, kinds: [String: RoomScope]) -> String? {
        let shared = kinds.filter { $0.value == .shared }.keys.sorted().joined(separator: ", ")
        for name in configuration.roomExpiry.keys.sorted() {
            switch kinds[name] {
            case nil: return "room-expiry names \(name), which is no room kind; kinds with stored rooms are \(shared)"
            case .perSession?: return "room-expiry names \(name), a per-session kind: its rooms end with their connection and are never stored, so none expires; kinds with stored rooms are \(shared)"
            case .shared?: continue
            }
        }
        return nil
    }

    /// A single node: takes the data directory's lock and opens its database; throws when either
    /// fails. (A cluster node is made with `make`, which joins the cluster first.)
    public convenience init(configuration: ServerConfiguration = .init(), kinds: [ViewModelKind],
                            logger: Logger = Logger(label: "tetherd")) throws(StartupError) {
        guard configuration.natsURLs.isEmpty else { throw .configuration("a cluster node is made with TetherServer.make (it joins the cluster first)") }
        try self.init(configuration: configuration, kinds: kinds, logger: logger, metrics: ServerMetrics(), cluster: nil)
    }

    /// A single node, or, when `configuration.natsURLs` is set, a node of that cluster: joins it
    /// (its streams and buckets are made if missing), then builds the server.
    public static func make(configuration: ServerConfiguration, kinds: [ViewModelKind],
                            logger: Logger = Logger(label: "tetherd")) async throws(StartupError) -> TetherServer {
        let metrics = ServerMetrics()
        let cluster = configuration.natsURLs.isEmpty ? nil : try await ClusterNode.join(configuration: configuration, metrics: metrics, logger: logger)
        do {
            return try TetherServer(configuration: configuration, kinds: kinds, logger: logger, metrics: metrics, cluster: cluster)
        } catch {
            cluster?.leave()
            throw error
        }
    }

    private init(configuration: ServerConfiguration, kinds: [ViewModelKind], logger: Logger, metrics: ServerMetrics,
                 cluster: ClusterNode?) throws(StartupError) {
        var configuration = configuration
        if let provider = configuration.identityProvider {
            let keys = configuration.identityKeys ?? IdentityKeys(minRefreshInterval: provider.minRefreshInterval)
            configuration.identityKeys = keys
            jwksRefresher = JWKSRefresher(provider: provider, keys: keys, http: URLSessionOutboundHTTP(maxResponseBytes: JWKSRefresher.maxBytes),
                                          logger: logger, metrics: metrics)
        } else {
            jwksRefresher = nil
        }
        if let reserved = kinds.first(where: { SystemRoom.isSystemKind($0.name) }) {
            throw .configuration("room kind \(reserved.name): names starting with \(SystemRoom.prefix) are reserved for the server's own rooms")
        }
        kindScopes = Dictionary(kinds.map { ($0.name, $0.scope) }, uniquingKeysWith: { first, _ in first })
        if let problem = Self.roomExpiryProblem(in: configuration, kinds: kindScopes) { throw .setting(problem) }
        self.running = Mutex(configuration)
        self.logger = logger
        self.cluster = cluster
        // A cluster keeps shared rooms in its log; per-session rooms are never stored.
        var storedRooms: [StoredRoomSummary]?
        if cluster == nil, let directory = configuration.dataDirectory {
            let store = try RoomStore(directory: directory, durability: configuration.durability, historyLimit: configuration.historyMaxPatches, logger: logger)
            do {
                storedRooms = try store.summaries()
            } catch {
                store.close()
                throw .storage(error.description)
            }
            self.store = store
        } else {
            store = nil
        }
        transport = WebSocketServer(configuration: configuration.transportConfiguration, logger: logger)
        let runtime = ServerRuntime(clock: SystemClock()) { room in DispatchRoomExecutor(label: "tether.room.\(room)") }
        clusterWebhooks = cluster.map(ClusterWebhookOutbox.init(node:))
        let outbox: any WebhookOutbox = if let clusterWebhooks { clusterWebhooks } else if let store { store } else { MemoryWebhookOutbox() }
        let recorder = WebhookRecorder(endpoints: configuration.webhooks, outbox: outbox)
        webhookDeliverer = WebhookDeliverer(recorder: recorder, http: URLSessionOutboundHTTP(), logger: logger, metrics: metrics)
        recorder.wakeOnRecord { [webhookDeliverer] in webhookDeliverer.wake() }
        let administration = WebhookAdministration(deliverer: webhookDeliverer, recorder: recorder)
        let rooms = RoomService(configuration: configuration, kinds: kinds, runtime: runtime, queue: DispatchWorkQueue(label: "tether.rooms"),
                                store: store, storedRooms: storedRooms, metrics: metrics, logger: logger, webhooks: recorder,
                                makeSharedRooms: cluster.map { node in { environment in ClusterRoomFactory(node: node, environment: environment) } })
        self.rooms = rooms
        let transport = self.transport
        hubs = (0..<transport.shardCount).map { SessionHub(rooms: rooms, queue: TransportQueue(server: transport, shard: $0)) }
        bridges = hubs.map { TransportBridge(hub: $0, routes: HTTPRoutes(rooms: rooms, cluster: cluster, transport: transport, hub: $0,
                                                                                 webhooks: administration)) }
        rooms.statusBoard.servingShards { transport.shardStatistics }
        rooms.statusBoard.deliveringWebhooks { [webhookDeliverer] in webhookDeliverer.overview }
        if let cluster {
            cluster.startHeartbeat { rooms.hubs.openConnections }
            rooms.statusBoard.joinedCluster { (cluster.name, cluster.nodesJSON) }
        }
    }

    /// Listens and serves; returns the bound port (the chosen one when configured with 0).
    @discardableResult
    public func start() throws(StartupError) -> Int {
        let port: Int
        do {
            port = try transport.start(delegates: bridges)
        } catch {
            let (host, port) = (configuration.host, configuration.port)
            switch error as? TransportError {
            case .addressInUse?: throw .addressInUse(host: host, port: port)
            case .tls(let reason)?: throw .configuration("TLS: \(reason)")
            case .cannotListen(let reason)?, .startFailed(let reason)?: throw .cannotListen(host: host, port: port, reason)
            default: throw .cannotListen(host: host, port: port, "\(error)")
            }
        }
        boundPort.withLock { $0 = port }
        // Serving does not wait for the keys: until they land, the provider's tokens are refused
        // as "keys not fetched yet" and the server's own (HS256) tokens work.
        if let jwksRefresher { jwksTask.withLock { $0 = Task { await jwksRefresher.run() } } }
        webhookDeliverer.start()
        clusterWebhooks?.start(configured: { [webhookDeliverer] in webhookDeliverer.hasEndpoints },
                               wakingDeliverer: { [webhookDeliverer] in webhookDeliverer.wake() })
        rooms.statusBoard.listening(at: "\(configuration.scheme)://\(configuration.host):\(port)")
        for hub in hubs { hub.queue.execute { hub.startHousekeeping() } }
        rooms.startHousekeeping()
        logger.info("serving \(configuration.summary(port: port))")
        return port
    }

    /// The bound port once started.
    public var port: Int? { boundPort.withLock { $0 } }

    /// Prints "PROGRAM listening on ws://HOST:PORT" on stdout, PROGRAM being this process's name
    /// (tetherd, hello-tether): the one line scripts and tests wait for.
    public func announceListening(port: Int) {
        let program = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "tetherd"
        FileHandle.standardOutput.write(Data("\(program) listening on \(configuration.scheme)://\(configuration.host):\(port)\n".utf8))
    }

    /// The `Service` entry point: starts and says so (unless started already), serves until the
    /// group shuts down gracefully (or the task is cancelled), then shuts down.
    public func run() async throws {
        if port == nil { announceListening(port: try start()) }
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Graceful stop: refuses new connections, sends what is queued, closes every client with
    /// 1001, stops the rooms, closes the store. Returns when the socket thread is gone.
    public func shutdown() async {
        logger.info("shutting down")
        for hub in hubs { hub.queue.execute { hub.stopHousekeeping() } }
        rooms.stopHousekeeping()
        jwksTask.withLock { $0?.cancel() }
        await transport.shutdownAsync(deadline: configuration.shutdownGracePeriod * 2)
        await rooms.stopAllRooms()
        await webhookDeliverer.stop()
        await clusterWebhooks?.stop()
        store?.close()
        cluster?.leave()
        logger.info("stopped")
    }

    /// The Prometheus exposition text, as `GET /metrics` serves it.
    public func metricsText() -> String {
        String(decoding: bridges[0].routes.metrics.render(), as: UTF8.self)
    }
}
