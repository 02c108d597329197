import Foundation
import Logging
import Synchronization
import TetherJSON
import TetherNATS
import TetherState

/// This process as a node of a Tether cluster: messages between nodes, the streams that hold
/// every room's log, and the KV buckets for room ownership, room snapshots and node liveness, on
/// NATS JetStream (`join`) or in memory for tests (`MemoryCluster`). docs/CLUSTER.md explains
/// the design.
///
/// Subjects, for a room whose escaped name is T on stream shard S:
/// - `tether.log.S.T`: the room's log (every version step, appended by its owner, checked);
/// - `tether.fan.S.T`: the same messages republished once stored, to every node with interest;
/// - `tether.act.T`: actions forwarded to the room's owner (request/reply).
final class ClusterNode: Sendable {
    let name: String
    let messaging: any ClusterMessaging
    let log: any ClusterLog
    /// Room token → owning node; entries expire after the lease unless renewed.
    let owners: any ClusterKeyValue
    /// Room token → the room's latest snapshot (epoch, version, stream sequence, state).
    let snapshots: any ClusterKeyValue
    /// Node name → its heartbeat (rooms, connections), expiring when the node stops beating.
    let nodes: any ClusterKeyValue
    /// Closes the connection to the cluster (at `leave`).
    private let close: @Sendable () -> Void
    let streamCount: Int
    let lease: Duration
    let metrics: ServerMetrics
    /// The key of the history's argument digests (`StepProvenance`), the cluster's own: kept in
    /// the snapshots bucket, the same on every node.
    let historyKey: [UInt8]
    let logger: Logger
    /// Rooms this node owns now, and the nodes it saw at the last heartbeat.
    private let state = Mutex(State())
    private let heartbeat = Mutex<Task<Void, Never>?>(nil)
    /// Set when closing on purpose, so the connection's last event is not reported as a loss.
    private let leaving: LeavingFlag

    private struct State {
        var ownedRooms: Set<String> = []
        /// Node name → its last heartbeat, for the nodes beating now.
        var seenNodes: [String: JSON] = [:]
        /// Nodes whose heartbeats stopped without their leaving: name → their last heartbeat.
        var downNodes: [String: JSON] = [:]
        var connectionCount = 0
    }

    /// How long a node whose heartbeats stopped (killed, hung, cut off) stays listed as down,
    /// unless it beats again. A node that shuts down gracefully says so and is not listed.
    static let downNodeRetention = 24 * 3_600

    /// Log messages kept per room: enough to rebuild from the latest snapshot (one every
    /// `snapshotInterval` versions, or every `snapshotInterval` merged appends) with room to spare.
    static let logMessagesPerRoom: Int64 = 2_000
    /// A checkpoint entry (the room's state) every this many versions, for its history.
    static let checkpointInterval = 500
    static let snapshotInterval = 100

    init(name: String, messaging: any ClusterMessaging, log: any ClusterLog, owners: any ClusterKeyValue, snapshots: any ClusterKeyValue,
         nodes: any ClusterKeyValue, streamCount: Int, lease: Duration, metrics: ServerMetrics,
         historyKey: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }, logger: Logger,
         leaving: LeavingFlag = LeavingFlag(), close: @escaping @Sendable () -> Void = {}) {
        self.leaving = leaving
        self.close = close
        self.name = name
        self.messaging = messaging
        self.log = log
        self.owners = owners
        self.snapshots = snapshots
        self.nodes = nodes
        self.streamCount = streamCount
        self.lease = lease
        self.metrics = metrics
        self.historyKey = historyKey
        self.logger = logger
    }

    /// Connects and makes sure the streams and buckets exist; one clear error otherwise.
    static func join(configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) async throws(StartupError) -> ClusterNode {
        let name = configuration.nodeName ?? "\(ProcessInfo.processInfo.hostName.split(separator: ".").first ?? "node")-\(RandomID.make(length: 4))"
        var options = NATSConnection.Options(urls: configuration.natsURLs, name: "tetherd \(name)")
        let leaving = LeavingFlag()
        options.pingInterval = .seconds(2)
        let connection: NATSConnection
        do {
            connection = try await NATSConnection.connect(options) { event in
                switch event {
                case .disconnected where leaving.value.load(ordering: .relaxed): break
                case .disconnected: logger.warning("cluster: lost the NATS connection; actions get unavailable until it returns")
                case .reconnected(let url): logger.notice("cluster: NATS connection back (\(url))")
                case .error(let message): logger.warning("cluster: NATS: \(message)")
                case .closed: break
                }
            }
        } catch {
            throw .clusterUnreachable(error.description)
        }
        do {
            let jetStream = try connection.jetStream(timeout: .seconds(5))
            for shard in 0..<configuration.clusterStreams {
                _ = try await whileElecting(logger) {
                    try await jetStream.addOrUpdateStream(JetStream.StreamConfiguration(
                        name: "TETHER_LOG_\(shard)", subjects: ["tether.log.\(shard).>"], replicas: configuration.clusterReplicas,
                        storage: .file, maxMessagesPerSubject: logMessagesPerRoom, duplicateWindow: .seconds(120),
                        rePublish: .init(source: "tether.log.\(shard).>", destination: "tether.fan.\(shard).>")))
                }
            }
            let replicas = configuration.clusterReplicas
            // Webhook events waiting for delivery (Cluster/ClusterWebhooks.swift); delivered ones are deleted.
            _ = try await whileElecting(logger) {
                try await jetStream.addOrUpdateStream(JetStream.StreamConfiguration(
                    name: ClusterWebhookOutbox.stream, subjects: ["tether.webhooks.>"], replicas: replicas, storage: .file,
                    duplicateWindow: .seconds(120)))
            }
            let owners = try await whileElecting(logger) { try await jetStream.keyValue(bucket: "TETHER_OWNERS", ttl: configuration.ownershipLease, replicas: replicas) }
            let snapshots = try await whileElecting(logger) { try await jetStream.keyValue(bucket: "TETHER_SNAPSHOTS", replicas: replicas) }
            let nodes = try await whileElecting(logger) { try await jetStream.keyValue(bucket: "TETHER_NODES", ttl: .seconds(6), replicas: replicas) }
            let historyKey = try await whileElecting(logger) { try await Self.historyKey(in: snapshots) }
            let node = ClusterNode(name: name, messaging: NATSClusterMessaging(connection: connection), log: NATSClusterLog(jetStream: jetStream),
                                   owners: owners, snapshots: snapshots, nodes: nodes, streamCount: configuration.clusterStreams,
                                   lease: configuration.ownershipLease, metrics: metrics, historyKey: historyKey, logger: logger, leaving: leaving,
                                   close: { connection.close() })
            logger.info("cluster: joined as node \(name) (\(configuration.clusterStreams) log streams, \(configuration.clusterReplicas) replicas, lease \(configuration.ownershipLease))")
            reportDurability(configuration.natsMonitoringURLs, logger: logger)
            return node
        } catch let error as NATSError {
            leaving.value.store(true, ordering: .relaxed)
            connection.close()
            throw .clusterStorage(error.description)
        } catch {
            leaving.value.store(true, ordering: .relaxed)
            connection.close()
            throw .clusterStorage("\(error)")
        }
    }

    static let historyKeyName = "tether.history.key"

    /// The cluster's history key: the first node makes it, every node reads it.
    static func historyKey(in snapshots: any ClusterKeyValue) async throws(NATSError) -> [UInt8] {
        if let entry = try await snapshots.get(historyKeyName) { return entry.value }
        let made = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let created = await withCheckedContinuation { continuation in
            snapshots.create(historyKeyName, made) { continuation.resume(returning: $0) }
        }
        switch created {
        case .success: return made
        case .failure(.keyExists): return try await snapshots.get(historyKeyName)?.value ?? made
        case .failure(let error): throw error
        }
    }

    /// Says, in the background, whether the NATS servers fsync each write before their ack.
    private static func reportDurability(_ monitoringURLs: [String], logger: Logger) {
        guard !monitoringURLs.isEmpty else {
            return logger.notice("cluster: whether the NATS servers fsync each write before their ack is not checked: give their monitoring endpoints with --nats-monitoring (docs/CLUSTER.md, \"What an ack promises\")")
        }
        Task {
            for finding in await NATSDurability.check(monitoringURLs: monitoringURLs) {
                if finding.isDurable {
                    logger.info("cluster: \(finding.description)")
                } else {
                    logger.warning("cluster: \(finding.description)")
                }
            }
        }
    }

    /// Runs `setup`, again while JetStream is not ready yet (`isNotReadyYet`): a cluster starting
    /// with its NATS servers, or a node starting while one of them is paused or restarting. For
    /// up to 30 seconds; then the error stands (replicas that can never be placed, more than
    /// there are servers, are refused after that wait).
    private static func whileElecting<T>(_ logger: Logger, _ setup: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try await setup()
            } catch let error as NATSError {
                guard isNotReadyYet(error), ContinuousClock.now < deadline else { throw error }
                logger.debug("cluster: JetStream not ready yet (\(error)); waiting")
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    /// JetStream's answers that mean "not yet": no meta leader; (nats-server 2.10 on) a meta
    /// group that does not know every peer yet, so no replicas can be placed (10005, "no
    /// suitable peers"); "JetStream system temporarily unavailable" (10008: a node restarted
    /// while a NATS server was paused or being re-elected, and exited 78 before this).
    static func isNotReadyYet(_ error: NATSError) -> Bool {
        switch error {
        case .streamNotCreated(_, let setting, let detail):
            setting == "jetstream" || detail.contains("no suitable peers") || detail.contains("JetStream error 10005")
                || detail.contains("JetStream error 10008")
        case .jetStream(_, let errorCode, _):
            errorCode == 10008
        default:
            false
        }
    }

    func leave() {
        leaving.value.store(true, ordering: .relaxed)
        heartbeat.withLock { $0?.cancel() }
        // A last beat that says it left on purpose: the others drop it instead of listing it as
        // down when its heartbeats stop (the entry expires with the bucket's TTL).
        let beat: JSON = ["name": .string(name), "leaving": true, "at": .int(Int(Date().timeIntervalSince1970))]
        nodes.put(name, beat.encoded()) { _ in }
        close()
    }

    // MARK: Subjects

    func token(_ room: String) -> String { NATSSubject.escape(room) }

    /// The stream shard of a room: a stable hash of its name.
    func shard(_ room: String) -> Int { Self.shard(room, streams: streamCount) }

    static func shard(_ room: String, streams: Int) -> Int {
        var hash: UInt32 = 2_166_136_261  // FNV-1a
        for byte in room.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash % UInt32(streams))
    }

    func stream(_ room: String) -> String { "TETHER_LOG_\(shard(room))" }
    func logSubject(_ room: String) -> String { "tether.log.\(shard(room)).\(token(room))" }
    func fanSubject(_ room: String) -> String { "tether.fan.\(shard(room)).\(token(room))" }
    /// Where the log republishes a stored message of `logSubject` (the streams' RePublish).
    static func fanSubject(ofLog subject: String) -> String? {
        subject.hasPrefix("tether.log.") ? "tether.fan." + subject.dropFirst("tether.log.".count) : nil
    }
    func actionSubject(_ room: String) -> String { "tether.act.\(token(room))" }
    /// Actions forwarded to the owner by name: a paused old owner, still subscribed, gets none of
    /// them (the queue group of `actionSubject` could pick it: issue 30's grey failures).
    func actionSubject(_ room: String, owner: String) -> String { "tether.act.\(token(room)).\(NATSSubject.escape(owner))" }
    /// A node that takes a room says so here (core NATS), so forwards stuck at the old owner end.
    func ownerSubject(_ room: String) -> String { "tether.owner.\(token(room))" }

    // MARK: Ownership bookkeeping

    func didTakeOwnership(of room: String) {
        state.withLock { _ = $0.ownedRooms.insert(room) }
        metrics.ownershipChanges.increment()
    }

    func didReleaseOwnership(of room: String) {
        state.withLock { _ = $0.ownedRooms.remove(room) }
    }

    var ownedRooms: [String] { state.withLock { $0.ownedRooms.sorted() } }

    // MARK: Heartbeat and status

    /// Writes this node's heartbeat every second and reads the others'. `connections` is read
    /// from the hub each time.
    func startHeartbeat(connections: @escaping @Sendable () -> Int) {
        let task = Task { [self] in
            while !Task.isCancelled {
                let now = Int(Date().timeIntervalSince1970)
                let beat: JSON = ["name": .string(name), "rooms": .int(ownedRooms.count), "connections": .int(connections()), "at": .int(now)]
                _ = try? await nodes.put(name, beat.encoded())
                if let keys = try? await nodes.keys() {
                    var beats: [String: JSON?] = [:]
                    for key in keys {
                        beats[key] = (try? await nodes.get(key)).flatMap { $0 }.flatMap { try? JSONParser().parse($0.value) }
                    }
                    state.withLock { Self.heard(beats, now: now, in: &$0) }
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        heartbeat.withLock { $0 = task }
    }

    /// Takes one round of heartbeats (`nil`: listed, but unreadable this time): a node no longer
    /// listed went down, unless its last beat said it was leaving.
    private static func heard(_ beats: [String: JSON?], now: Int, in state: inout State) {
        for (name, beat) in state.seenNodes where beats[name] == nil && beat["leaving"] != true {
            state.downNodes[name] = beat
        }
        var seen: [String: JSON] = [:]
        for (name, beat) in beats {
            seen[name] = beat ?? state.seenNodes[name]
            state.downNodes[name] = nil
        }
        state.seenNodes = seen.filter { $0.value["leaving"] != true }
        state.downNodes = state.downNodes.filter { now - ($0.value["at"]?.intValue ?? now) < downNodeRetention }
    }

    /// Every node this one sees beating, and those whose heartbeats stopped (with `downSince`,
    /// their last heartbeat, in seconds since 1970), by name: the dashboard's list and
    /// `GET /cluster`'s.
    var nodesJSON: [JSON] {
        state.withLock { state in
            let up = state.seenNodes.map { name, beat -> (String, JSON) in
                (name, ["name": .string(name), "alive": true, "rooms": beat["rooms"] ?? 0, "connections": beat["connections"] ?? 0])
            }
            let down = state.downNodes.map { name, beat -> (String, JSON) in
                (name, ["name": .string(name), "alive": false, "downSince": beat["at"] ?? .null, "rooms": 0, "connections": 0])
            }
            return (up + down).sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// `GET /cluster`: this node, the nodes it sees (and those down), the rooms it owns.
    var statusJSON: JSON {
        [
            "node": .string(name),
            "connected": .bool(messaging.isConnected),
            "nodes": .array(nodesJSON),
            "ownedRooms": .array(ownedRooms.map(JSON.string)),
            "logReadsFromLeader": .int(log.readsFromLeader),
        ]
    }

    /// The rooms whose latest snapshot the cluster holds (a room has one once it reached
    /// `snapshotInterval` versions), as the room list shows them: read from the snapshots
    /// bucket in the background, for at most 5 seconds; `completion` runs on no particular thread.
    func snapshotRooms(_ completion: @escaping @Sendable ([RoomListEntry]) -> Void) {
        let snapshots = self.snapshots
        Task {
            let deadline = ContinuousClock.now + .seconds(5)
            var rooms: [RoomListEntry] = []
            let keys = (try? await snapshots.keys()) ?? []
            // Reads overlap, a batch at a time: one request per room.
            for batch in stride(from: 0, to: keys.count, by: 64).map({ keys[$0..<min($0 + 64, keys.count)] }) where ContinuousClock.now < deadline {
                await withTaskGroup(of: RoomListEntry?.self) { group in
                    for key in batch {
                        group.addTask {
                            guard let name = NATSSubject.unescape(key), let entry = try? await snapshots.get(key),
                                  let snapshot = ClusterSnapshot(entry.value) else { return nil }
                            return RoomListEntry(name: name, kind: String(name.prefix { $0 != ":" }), scope: RoomScope.shared.rawValue,
                                                 subscribers: 0, inMemory: false, version: snapshot.version,
                                                 bytes: snapshot.state.encoded().count)
                        }
                    }
                    for await room in group { if let room { rooms.append(room) } }
                }
            }
            completion(rooms)
        }
    }
}

/// Shared rooms as a cluster's: a `ClusteredRoom` per room on this node.
struct ClusterRoomFactory: RoomFactory {
    let node: ClusterNode
    let environment: RoomEnvironment

    func makeRoom(named name: String, kind: ViewModelKind, after predecessor: (any RoomEndpoint)?,
                  output: any RoomOutput) -> any RoomEndpoint {
        let room = ClusteredRoom(name: name, kind: kind, node: node, environment: environment, output: output)
        room.start(after: predecessor)
        return room
    }
}

final class LeavingFlag: Sendable {
    let value = Atomic(false)
}

extension RoomService {
    /// Rooms whose shared ones are a cluster's, as node `node` on a cluster transport in memory
    /// (TetherTesting's `MemoryCluster` and `TestCluster`): the cluster code of tetherd, on
    /// virtual time. `keyValue` gives the node its buckets (name, time to live).
    package convenience init(configuration: ServerConfiguration, kinds: [ViewModelKind], runtime: ServerRuntime, queue: any WorkQueue,
                             node: String, connection: any ClusterMessaging & ClusterLog,
                             keyValue: (_ bucket: String, _ ttl: Duration?) -> any ClusterKeyValue, logger: Logger) {
        let metrics = ServerMetrics()
        let clusterNode = ClusterNode(
            name: node, messaging: connection, log: connection,
            owners: keyValue("TETHER_OWNERS", configuration.ownershipLease),
            snapshots: keyValue("TETHER_SNAPSHOTS", nil),
            nodes: keyValue("TETHER_NODES", .seconds(6)),
            streamCount: configuration.clusterStreams, lease: configuration.ownershipLease, metrics: metrics, logger: logger)
        self.init(configuration: configuration, kinds: kinds, runtime: runtime, queue: queue, store: nil, storedRooms: nil, metrics: metrics,
                  logger: logger, makeSharedRooms: { environment in ClusterRoomFactory(node: clusterNode, environment: environment) })
    }
}

/// tetherd's subjects, for a cluster transport in memory (TetherTesting's `MemoryCluster`).
package enum ClusterSubjects {
    /// Room `room`'s log subject over `streams` log streams.
    package static func log(of room: String, streams: Int) -> String {
        "tether.log.\(ClusterNode.shard(room, streams: streams)).\(NATSSubject.escape(room))"
    }

    /// Where a stored message of a log subject is republished (the streams' RePublish).
    package static func fan(ofLog subject: String) -> String? { ClusterNode.fanSubject(ofLog: subject) }
}
