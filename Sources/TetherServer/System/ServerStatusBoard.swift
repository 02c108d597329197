import Foundation
import Synchronization
import TetherJSON
import TetherTransport

/// What the system room `tether.server` shows, gathered where each part lives.
///
/// Once a second, during its housekeeping on its own queue, the hub records the counts, one
/// second of activity (differenced from the metrics' running totals) and, while the system room
/// exists, the room list; the system room's timer reads the latest record. Rooms publish their
/// version into a `RoomVersionCell` (one atomic store per version). Nothing is done per patch or
/// per client for it, and nothing is gathered per room while nobody watches.
final class ServerStatusBoard: Sendable {
    /// One entry per second in `recent`, this many seconds back.
    static let recentSeconds = 300
    /// The room list stops here (`roomListTruncated`).
    static let maxListedRooms = 500

    /// One second of activity.
    struct Sample: Codable, Equatable, Sendable {
        /// Seconds since 1970 at its end.
        var t: Int
        var connections: Int
        var deliveries: Int
        var actions: Int
    }

    struct Rates: Codable, Equatable, Sendable {
        var deliveriesPerSecond = 0.0
        var actionsPerSecond = 0.0
        var bytesOutPerSecond = 0.0
    }

    /// What the hub recorded last.
    struct Record: Sendable {
        var connections = 0
        var rooms = 0
        var auth = false
        var rates = Rates()
        /// Oldest first, at most `recentSeconds`.
        var recent: [Sample] = []
        /// Sorted by name, at most `maxListedRooms`; empty while the system room does not exist.
        var roomList: [RoomListEntry] = []
        var roomListTruncated = false
    }

    /// The server's facts that don't change while it runs.
    private struct Facts: Sendable {
        var name: String
        var tls: Bool
        var durability: String?
        /// `server.storage` without `bytes`: `{"kind": "sqlite", "path"}`, `{"kind": "memory"}`,
        /// or on a cluster node `{"kind": "jetstream", "streams", "replicas"}`.
        var storage: [String: JSON]
        /// The database, whose size is read for each record (single node with storage only).
        var databasePath: String?
    }

    private struct State: Sendable {
        var record = Record()
        var listen: String?
        /// On a cluster node: its name and the nodes it sees (each `{name, alive, rooms, connections}`).
        var clusterView: (@Sendable () -> (node: String, nodes: [JSON]))?
        /// The socket shards' figures (nil in process, with no sockets).
        var shards: (@Sendable () -> [ShardStatistics])?
        /// The webhook endpoints, each `{name, url, pending, dead, disabled, lastError?, ...}`.
        var webhooks: (@Sendable () -> [JSON])?
        var lastTotals: (deliveries: Int64, actions: Int64, bytesOut: Int64)?
        var lastRecorded: ContinuousClock.Instant?
    }

    private let facts: Facts
    private let clock: any ServerClock
    private let metrics: ServerMetrics
    private let started: ContinuousClock.Instant
    private let startedAt: Int
    private let state = Mutex(State())

    init(configuration: ServerConfiguration, clock: any ServerClock, metrics: ServerMetrics) {
        if !configuration.natsURLs.isEmpty {
            // A cluster node keeps shared rooms in JetStream: what an ack means is the streams'
            // replication, not --durability, and --data holds nothing.
            facts = Facts(name: configuration.serverName, tls: configuration.tls != nil, durability: "jetstream",
                          storage: ["kind": "jetstream", "streams": .int(configuration.clusterStreams), "replicas": .int(configuration.clusterReplicas)])
        } else if let directory = configuration.dataDirectory {
            let database = (directory as NSString).appendingPathComponent(RoomStore.databaseFileName)
            facts = Facts(name: configuration.serverName, tls: configuration.tls != nil, durability: configuration.durability.rawValue,
                          storage: ["kind": "sqlite", "path": .string(database)], databasePath: database)
        } else {
            facts = Facts(name: configuration.serverName, tls: configuration.tls != nil, durability: nil, storage: ["kind": "memory"])
        }
        self.clock = clock
        self.metrics = metrics
        started = clock.now
        startedAt = clock.secondsSince1970
        state.withLock { $0.record.auth = configuration.requiresTokens }
    }

    /// This server is a node of a cluster: `view` tells its name and the nodes it sees.
    func joinedCluster(_ view: @escaping @Sendable () -> (node: String, nodes: [JSON])) {
        state.withLock { $0.clusterView = view }
    }

    /// The server serves its sockets on shards: `figures` tells each one's connections and CPU.
    func servingShards(_ figures: @escaping @Sendable () -> [ShardStatistics]) {
        state.withLock { $0.shards = figures }
    }

    /// The server sends webhooks: `overview` tells each endpoint's queue and last error.
    func deliveringWebhooks(_ overview: @escaping @Sendable () -> [JSON]) {
        state.withLock { $0.webhooks = overview }
    }

    /// The address clients use, once the server listens.
    func listening(at url: String) {
        state.withLock { $0.listen = url }
    }

    // MARK: Written by the hub, once a second on its queue

    /// Records the hub's counts and the activity since the last call. `roomList` is nil while
    /// nobody watches (the list is then left empty rather than stale).
    func record(connections: Int, rooms: Int, auth: Bool, roomList: [RoomListEntry]?) {
        let now = clock.now
        let wall = clock.secondsSince1970
        let totals = (deliveries: metrics.patchDeliveries.value, actions: metrics.actions, bytesOut: metrics.bytesSent.value)
        state.withLock { state in
            state.record.connections = connections
            state.record.rooms = rooms
            state.record.auth = auth
            if let list = roomList {
                state.record.roomListTruncated = list.count > Self.maxListedRooms
                state.record.roomList = Array(list.prefix(Self.maxListedRooms))
            } else {
                state.record.roomList = []
                state.record.roomListTruncated = false
            }
            if let last = state.lastTotals, let since = state.lastRecorded, now > since {
                let seconds = Double((now - since).components.attoseconds) / 1e18 + Double((now - since).components.seconds)
                let sample = Sample(t: wall, connections: connections, deliveries: Int(totals.deliveries - last.deliveries),
                                    actions: Int(totals.actions - last.actions))
                // Two decimals are plenty for a person, and keep the patch short.
                func perSecond(_ count: Int64) -> Double { (Double(count) / seconds * 100).rounded() / 100 }
                state.record.rates = Rates(deliveriesPerSecond: perSecond(totals.deliveries - last.deliveries),
                                           actionsPerSecond: perSecond(totals.actions - last.actions),
                                           bytesOutPerSecond: perSecond(totals.bytesOut - last.bytesOut))
                state.record.recent.append(sample)
                if state.record.recent.count > Self.recentSeconds {
                    state.record.recent.removeFirst(state.record.recent.count - Self.recentSeconds)
                }
            }
            state.lastTotals = totals
            state.lastRecorded = now
        }
    }

    // MARK: Read by the system room

    /// The last record, and the `server` member of the document as of now.
    func current() -> (record: Record, server: [String: JSON], nodes: [JSON], webhooks: [JSON]) {
        let (record, listen, clusterView, shards, webhooks) = state.withLock { ($0.record, $0.listen, $0.clusterView, $0.shards, $0.webhooks) }
        let cluster = clusterView?()
        var storage = facts.storage
        if let path = facts.databasePath { storage["bytes"] = .int(Self.databaseBytes(path)) }
        let server: [String: JSON] = [
            "name": .string(facts.name),
            "version": .string(TetherServer.version),
            "startedAt": .string(Date(timeIntervalSince1970: TimeInterval(startedAt)).formatted(.iso8601)),
            "uptimeSeconds": .int(Int((clock.now - started).components.seconds)),
            // The cluster's node name; null on a single daemon.
            "node": cluster.map { .string($0.node) } ?? .null,
            "listen": listen.map(JSON.string) ?? .null,
            "tls": .bool(facts.tls),
            "auth": .bool(record.auth),
            "durability": facts.durability.map(JSON.string) ?? .null,
            "storage": .object(storage),
            // Each socket thread's connections and CPU seconds; null in process.
            "shards": shards.map { .array($0().map(\.json)) } ?? .null,
        ]
        return (record, server, cluster?.nodes ?? [], webhooks?() ?? [])
    }

    /// The database and its write-ahead log, in bytes.
    private static func databaseBytes(_ path: String) -> Int {
        [path, path + "-wal"].reduce(0) { total, file in
            var info = stat()
            return total + (stat(file, &info) == 0 ? Int(info.st_size) : 0)
        }
    }
}

/// A room's epoch, version, last change, size and presence members' count where other threads
/// can read them (for the room list): the room writes them on its executor, a few relaxed atomic
/// stores per version or presence change; the epoch changes only when the room starts.
final class RoomVersionCell: Sendable {
    private let storedVersion = Atomic<Int>(0)
    private let storedMembers = Atomic<Int>(0)
    private let storedEpoch: Mutex<String>
    private let storedLastChange = Atomic<Int>(0)
    private let storedStateBytes = Atomic<Int>(0)

    init(epoch: String) {
        storedEpoch = Mutex(epoch)
    }

    var version: Int {
        get { storedVersion.load(ordering: .relaxed) }
        set { storedVersion.store(newValue, ordering: .relaxed) }
    }

    var members: Int {
        get { storedMembers.load(ordering: .relaxed) }
        set { storedMembers.store(newValue, ordering: .relaxed) }
    }

    var epoch: String {
        get { storedEpoch.withLock { $0 } }
        set { storedEpoch.withLock { $0 = newValue } }
    }

    /// When the room's state last changed, in seconds since 1970 (0: unknown yet).
    var lastChange: Int {
        get { storedLastChange.load(ordering: .relaxed) }
        set { storedLastChange.store(newValue, ordering: .relaxed) }
    }

    /// The state's encoded size, estimated (it errs a few bytes high per member; 0: unknown).
    var stateBytes: Int {
        get { storedStateBytes.load(ordering: .relaxed) }
        set { storedStateBytes.store(newValue, ordering: .relaxed) }
    }
}

extension ShardStatistics {
    /// `{"connections": N, "cpuSeconds": S}`, as the status room and `GET /cluster` show it.
    var json: JSON {
        .object(["connections": .int(connections), "cpuSeconds": .double((cpuSeconds * 1000).rounded() / 1000)])
    }
}
