import TetherNATS

/// What a cluster node needs from the system that joins the nodes: messages between nodes
/// (`ClusterMessaging`), the rooms' logs (`ClusterLog`) and key-value buckets (`ClusterKeyValue`).
/// tetherd uses NATS JetStream (`NATSTransport.swift`); tests use `MemoryCluster`, which keeps
/// the same rules in memory on virtual time (centrifuge's `Broker` and `MemoryBroker` are the
/// model). The value types and errors are TetherNATS's (`NATSMessage`, `StoredMessage`,
/// `NATSError`): they are the vocabulary of both.
///
/// Handlers and completions run on no particular thread and must return quickly: hand the value
/// to the room's executor.
public protocol ClusterMessaging: Sendable {
    /// Whether the node is connected now (`/ready` reports a node that is not).
    var isConnected: Bool { get }
    /// Subscribes to exactly `subject`; keep the subscription (releasing it unsubscribes).
    /// A message with a reply subject can be answered with `NATSMessage.respond`. With
    /// `queueGroup`, each message goes to one subscriber of the group only (NATS queue groups).
    func subscribe(_ subject: String, queueGroup: String?, handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError)
        -> any ClusterSubscription
    func publish(_ subject: String, _ data: [UInt8]) throws(NATSError)
    /// Calls `completion` once: the first answer, `noResponders` (nobody subscribes), `timeout`,
    /// or a connection error.
    func request(_ subject: String, _ data: [UInt8], timeout: Duration,
                 completion: @escaping @Sendable (Result<NATSMessage, NATSError>) -> Void)
}

extension ClusterMessaging {
    /// Subscribes to exactly `subject`: every subscriber gets every message.
    public func subscribe(_ subject: String, handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any ClusterSubscription {
        try subscribe(subject, queueGroup: nil, handler: handler)
    }
}

public protocol ClusterSubscription: AnyObject, Sendable {
    /// Stops deliveries (one being delivered may still finish).
    func unsubscribe()
}

/// The rooms' logs: streams of messages, each room on a subject of its own.
///
/// The rules the cluster's safety rests on: a checked append is stored only when the subject's
/// last sequence is `expectedLastSubjectSequence` (else `wrongLastSequence`), and only once per
/// `messageID` (a second append with a stored id gets `duplicate` with the first's sequence).
/// A subject ending in `.>` reads every subject under it, in sequence order.
/// Every stored message is then republished to the room's fan subject with the headers
/// `Nats-Sequence` (its sequence) and `Nats-Last-Sequence` (the subject's previous one).
public protocol ClusterLog: Sendable {
    func append(_ subject: String, _ data: [UInt8], headers: NATSHeaders, messageID: String, expectedLastSubjectSequence: UInt64,
                timeout: Duration, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void)
    /// Delivers the messages of `subject` from `sequence` on, in order, to the end of the log
    /// (appended meanwhile included); then `completion` gets the last sequence delivered (nil
    /// when none) or an error (the messages delivered before it stand).
    func read(stream: String, subject: String, from sequence: UInt64, handler: @escaping @Sendable (StoredMessage) -> Void,
              completion: @escaping @Sendable (Result<UInt64?, NATSError>) -> Void)
    /// Reads that ended on the stream leader because the replica serving them was behind it
    /// (`GET /cluster` shows the count).
    var readsFromLeader: Int { get }
    /// An append checked against the whole stream's last sequence (`wrongLastSequence` with the
    /// stream's if it moved on; deleting messages does not move it back), stored once per
    /// `messageID` within the stream's duplicate window (a repeat gets `duplicate`).
    func publish(_ subject: String, _ data: [UInt8], headers: NATSHeaders, messageID: String, expectedLastSequence: UInt64,
                 timeout: Duration, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void)
    /// The stream's last sequence (deleted messages count).
    func lastSequence(stream: String) async throws(NATSError) -> UInt64
    /// Removes one message (gone already counts as done).
    func delete(stream: String, sequence: UInt64, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void)
}

extension ClusterLog {
    public var readsFromLeader: Int { 0 }
}

/// A key-value bucket with revisions (and, for leases, a time to live after the last write).
public protocol ClusterKeyValue: Sendable {
    func get(_ key: String, completion: @escaping @Sendable (Result<NATSKeyValue.Entry?, NATSError>) -> Void)
    /// Only if the key has no value: else `keyExists`.
    func create(_ key: String, _ value: [UInt8], completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void)
    /// Only if the key is at `lastRevision`: else `wrongRevision`.
    func update(_ key: String, _ value: [UInt8], lastRevision: UInt64, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void)
    func put(_ key: String, _ value: [UInt8], completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void)
    func delete(_ key: String, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void)
    func keys() async throws(NATSError) -> [String]
}

extension ClusterKeyValue {
    func put(_ key: String, _ value: [UInt8]) async throws(NATSError) -> UInt64 {
        let result = await withCheckedContinuation { continuation in put(key, value) { continuation.resume(returning: $0) } }
        return try result.get()
    }

    func get(_ key: String) async throws(NATSError) -> NATSKeyValue.Entry? {
        let result = await withCheckedContinuation { continuation in get(key) { continuation.resume(returning: $0) } }
        return try result.get()
    }
}
