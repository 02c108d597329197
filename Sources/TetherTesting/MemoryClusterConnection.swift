import Synchronization
import TetherNATS
import TetherServer

// One node's side of a `MemoryCluster`: its connection (messages, the logs, KV buckets), its
// subscriptions and its buckets, each a handle on the cluster's shared state.

/// One node's connection to a `MemoryCluster` (what `NATSConnection` and its JetStream context
/// are to tetherd).
public final class MemoryClusterConnection: ClusterMessaging, ClusterLog, Sendable {
    public let node: String
    private let cluster: MemoryCluster
    private let link: Int

    init(cluster: MemoryCluster, node: String, link: Int) {
        self.cluster = cluster
        self.node = node
        self.link = link
    }

    public var isConnected: Bool { cluster.isConnected(link) }

    public func subscribe(_ subject: String, queueGroup: String?, handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError)
        -> any ClusterSubscription {
        // Allowed while disconnected, as the C client allows it: it receives once reconnected.
        MemorySubscription(cluster: cluster, id: cluster.subscribe(link, subject, queueGroup: queueGroup, handler: handler), subject: subject)
    }

    public func publish(_ subject: String, _ data: [UInt8]) throws(NATSError) {
        try cluster.publish(link, subject, data)
    }

    public func request(_ subject: String, _ data: [UInt8], timeout: Duration,
                        completion: @escaping @Sendable (Result<NATSMessage, NATSError>) -> Void) {
        cluster.request(link, subject, data, timeout: timeout, completion: completion)
    }

    /// Completes at once (through `deliver`): the memory log has no replicas to wait for, so
    /// `timeout` is not used.
    public func append(_ subject: String, _ data: [UInt8], headers: NATSHeaders, messageID: String, expectedLastSubjectSequence: UInt64,
                       timeout: Duration, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        cluster.append(link, subject, data, headers: headers, messageID: messageID,
                       expectedLastSubjectSequence: expectedLastSubjectSequence, completion: completion)
    }

    /// Streams are not told apart in memory: the last sequence is the cluster's.
    public func publish(_ subject: String, _ data: [UInt8], headers: NATSHeaders, messageID: String, expectedLastSequence: UInt64,
                        timeout: Duration, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        cluster.append(link, subject, data, headers: headers, messageID: messageID, expectedLastSubjectSequence: nil,
                       expectedLastSequence: expectedLastSequence, completion: completion)
    }

    /// The cluster's last sequence (streams are not told apart in memory).
    public func lastSequence(stream: String) async throws(NATSError) -> UInt64 { cluster.lastSequence }

    /// `stream` is not used: sequences are unique across the memory logs.
    public func delete(stream: String, sequence: UInt64, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        cluster.delete(link, sequence: sequence, completion: completion)
    }

    /// `stream` is not used: subjects are unique across the memory logs.
    public func read(stream: String, subject: String, from sequence: UInt64, handler: @escaping @Sendable (StoredMessage) -> Void,
                     completion: @escaping @Sendable (Result<UInt64?, NATSError>) -> Void) {
        cluster.read(link, subject, from: sequence, handler: handler, completion: completion)
    }

    /// A bucket shared by every node that opens the same name; `ttl` (the first opener's wins): a
    /// key expires that long after its last write (as NATS KV's MaxAge; how an ownership lease
    /// ends).
    public func keyValue(bucket: String, ttl: Duration?) -> any ClusterKeyValue {
        cluster.openBucket(bucket, ttl: ttl)
        return MemoryKeyValue(cluster: cluster, link: link, bucket: bucket)
    }
}

/// Releasing it unsubscribes, like `NATSSubscription`.
private final class MemorySubscription: ClusterSubscription {
    let cluster: MemoryCluster
    let id: Int
    let subject: String

    init(cluster: MemoryCluster, id: Int, subject: String) {
        self.cluster = cluster
        self.id = id
        self.subject = subject
    }

    func unsubscribe() { cluster.unsubscribe(id, subject) }

    deinit { cluster.unsubscribe(id, subject) }
}

/// A node's handle on a shared bucket. Revisions count per bucket; a delete takes one too (NATS
/// writes a delete marker).
private struct MemoryKeyValue: ClusterKeyValue {
    let cluster: MemoryCluster
    let link: Int
    let bucket: String

    func get(_ key: String, completion: @escaping @Sendable (Result<NATSKeyValue.Entry?, NATSError>) -> Void) {
        cluster.keyValue(link, bucket: bucket, key: key, completion) { bucket, now in
            .success(bucket.live(key, now: now).map { NATSKeyValue.Entry(key: key, value: $0.bytes, revision: $0.revision) })
        }
    }

    func create(_ key: String, _ value: [UInt8], completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        cluster.keyValue(link, bucket: bucket, key: key, completion) { bucket, now in
            if let refused = Self.refused(bucket, key) { return .failure(refused) }
            guard bucket.live(key, now: now) == nil else { return .failure(.keyExists(key: key)) }
            return .success(bucket.write(key, value, now: now))
        }
    }

    func update(_ key: String, _ value: [UInt8], lastRevision: UInt64, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        cluster.keyValue(link, bucket: bucket, key: key, completion) { bucket, now in
            if let refused = Self.refused(bucket, key) { return .failure(refused) }
            guard lastRevision > 0 else { return .failure(.invalidArgument("update needs a revision > 0; use create")) }
            let current = bucket.live(key, now: now)?.revision
            guard current == lastRevision else { return .failure(.wrongRevision(key: key, current: current)) }
            return .success(bucket.write(key, value, now: now))
        }
    }

    func put(_ key: String, _ value: [UInt8], completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        cluster.keyValue(link, bucket: bucket, key: key, completion) { bucket, now in
            if let refused = Self.refused(bucket, key) { return .failure(refused) }
            return .success(bucket.write(key, value, now: now))
        }
    }

    func delete(_ key: String, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        cluster.keyValue(link, bucket: bucket, key: key, completion) { bucket, _ in
            bucket.revision += 1
            bucket.values[key] = nil
            return .success(())
        }
    }

    /// A write to a bucket that refuses writes times out.
    private static func refused(_ bucket: MemoryCluster.Bucket, _ key: String) -> NATSError? {
        bucket.refusesWrites ? .timeout(subject: "$KV.\(key)") : nil
    }

    func keys() async throws(NATSError) -> [String] {
        try cluster.keys(link, bucket: bucket)
    }
}
