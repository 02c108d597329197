import CNATS

extension JetStream {
    /// Creates the KV bucket (a stream `KV_<bucket>` on subjects `$KV.<bucket>.>`, as the C
    /// client lays it out) or binds to it if it exists. Values older than `ttl` expire, so a key
    /// written with `create` and kept fresh with `update` works as a lease.
    public func keyValue(bucket: String, ttl: Duration? = nil, replicas: Int = 1, history: Int = 1,
                         storage: StreamConfiguration.Storage = .file) async throws(NATSError) -> NATSKeyValue {
        guard (1...64).contains(history) else { throw .invalidArgument("KV history must be 1...64, not \(history)") }
        let store = try await Blocking.run { () throws(NATSError) -> StoreHandle in
            let strings = CStrings()
            var config = kvConfig()
            kvConfig_Init(&config)
            config.Bucket = strings.make(bucket)
            config.History = UInt8(history)
            config.Replicas = Int32(replicas)
            config.StorageType = storage == .file ? js_FileStorage : js_MemoryStorage
            if let ttl { config.TTL = Int64(ttl.nanoseconds) }
            var store: OpaquePointer?
            var status = js_CreateKeyValue(&store, self.context, &config)
            if status != NATS_OK {
                // Exists with another configuration (e.g. another TTL): bind to it as it is.
                let createError = NATSError.library("create KV bucket \(bucket)", status)
                status = js_KeyValue(&store, self.context, bucket)
                guard status == NATS_OK else {
                    throw .streamNotCreated(stream: "KV_\(bucket)", setting: "replicas = \(replicas), ttl = \(ttl.map { "\($0)" } ?? "none")",
                                            detail: createError.description)
                }
            }
            return StoreHandle(pointer: store!)
        }
        let keyValue = NATSKeyValue(jetStream: self, bucket: bucket, store: store.pointer)
        try await keyValue.waitUntilAnswering(timeout: .seconds(10))
        return keyValue
    }
}

private struct StoreHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A JetStream KV bucket. `create`, `update`, `put`, `get` and `delete` are JetStream requests on
/// the connection's reply inbox: they never block, and their callback forms complete on a NATS
/// thread (see `NATSConnection`'s threading rules). `keys()` runs the C client's blocking call on a thread of its own.
///
/// On nats-server 2.9.10, `create` is a reliable compare-and-set (only one of two concurrent
/// creators wins) but `update` is not: two updates of the same revision through different servers
/// can both succeed (nats-server issue 4320, fixed in 2.9.21). Use a bucket as a lease that keeps
/// owners from fighting, and a checked append with a `Nats-Msg-Id` as the fence.
public final class NATSKeyValue: @unchecked Sendable {
    // @unchecked: the C store is thread-safe and immutable.
    public let jetStream: JetStream
    public let bucket: String
    private let store: OpaquePointer

    public struct Entry: Sendable, Equatable {
        public let key: String
        public let value: [UInt8]
        public let revision: UInt64

        public init(key: String, value: [UInt8], revision: UInt64) {
            self.key = key
            self.value = value
            self.revision = revision
        }
    }

    init(jetStream: JetStream, bucket: String, store: OpaquePointer) {
        self.jetStream = jetStream
        self.bucket = bucket
        self.store = store
    }

    deinit { kvStore_Destroy(store) }

    /// The stream that holds the bucket.
    public var streamName: String { "KV_\(bucket)" }

    func subject(_ key: String) -> String { "$KV.\(bucket).\(key)" }

    /// Keys are tokens of a subject: letters, digits and `-/_=.`, not starting or ending with `.`.
    static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && !key.hasPrefix(".") && !key.hasSuffix(".") && key.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "=") || byte == UInt8(ascii: ".")
        }
    }

    // MARK: Writing

    /// Stores `value` only if `key` has no value (never set, deleted, or expired by the TTL):
    /// the new revision, or `keyExists`.
    public func create(_ key: String, _ value: [UInt8], completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        guard Self.isValidKey(key) else { return completion(.failure(.invalidArgument("invalid KV key \(key)"))) }
        jetStream.publish(subject(key), value, expectedLastSubjectSequence: 0) { result in
            guard case .failure(.wrongLastSequence) = result else { return completion(result) }
            // The key's last entry may be a delete marker: then it counts as absent.
            self.latest(key) { latest in
                switch latest {
                case .failure(let error): completion(.failure(error))
                case .success(let entry?) where entry.deleted:
                    self.jetStream.publish(self.subject(key), value, expectedLastSubjectSequence: entry.message.sequence) { retry in
                        if case .failure(.wrongLastSequence) = retry { return completion(.failure(.keyExists(key: key))) }
                        completion(retry)
                    }
                case .success: completion(.failure(.keyExists(key: key)))
                }
            }
        }
    }

    /// Stores `value` only if `key`'s revision is still `lastRevision`: the new revision, or
    /// `wrongRevision` (see the type's note on 2.9.10).
    public func update(_ key: String, _ value: [UInt8], lastRevision: UInt64, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        guard Self.isValidKey(key) else { return completion(.failure(.invalidArgument("invalid KV key \(key)"))) }
        guard lastRevision > 0 else { return completion(.failure(.invalidArgument("update needs a revision > 0; use create"))) }
        jetStream.publish(subject(key), value, expectedLastSubjectSequence: lastRevision) { result in
            if case .failure(.wrongLastSequence(let current)) = result {
                return completion(.failure(.wrongRevision(key: key, current: current)))
            }
            completion(result)
        }
    }

    /// Stores `value` whatever the key holds: the new revision.
    public func put(_ key: String, _ value: [UInt8], completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        guard Self.isValidKey(key) else { return completion(.failure(.invalidArgument("invalid KV key \(key)"))) }
        jetStream.publish(subject(key), value, completion: completion)
    }

    /// Deletes the key (writes a delete marker; `get` then answers nil and `create` succeeds).
    public func delete(_ key: String, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        guard Self.isValidKey(key) else { return completion(.failure(.invalidArgument("invalid KV key \(key)"))) }
        jetStream.publish(subject(key), [], headers: ["KV-Operation": "DEL"]) { result in
            completion(result.map { _ in () })
        }
    }

    // MARK: Reading

    /// The key's current value and revision, or nil if it has none. Read from the stream leader.
    public func get(_ key: String, completion: @escaping @Sendable (Result<Entry?, NATSError>) -> Void) {
        guard Self.isValidKey(key) else { return completion(.failure(.invalidArgument("invalid KV key \(key)"))) }
        latest(key) { result in
            completion(result.map { latest in
                guard let latest, !latest.deleted else { return nil }
                return Entry(key: key, value: latest.message.data, revision: latest.message.sequence)
            })
        }
    }

    /// The key's last stored message, delete markers included.
    private func latest(_ key: String, completion: @escaping @Sendable (Result<(message: StoredMessage, deleted: Bool)?, NATSError>) -> Void) {
        jetStream.lastMessage(stream: streamName, subject: subject(key)) { result in
            completion(result.map { message in
                message.map { message in
                    let operation = message.headers["KV-Operation"]
                    return (message, operation == "DEL" || operation == "PURGE")
                }
            })
        }
    }

    /// Every key that has a value now (deleted keys are left out).
    public func keys() async throws(NATSError) -> [String] {
        try await Blocking.run { () throws(NATSError) -> [String] in
            var list = kvKeysList()
            let status = kvStore_Keys(&list, self.store, nil)
            if status == NATS_NOT_FOUND { return [] }  // no keys
            guard status == NATS_OK else { throw .library("keys of KV bucket \(self.bucket)", status) }
            defer { kvKeysList_Destroy(&list) }
            return (0..<Int(list.Count)).compactMap { list.Keys[$0].map { String(cString: $0) } }
        }
    }

    // MARK: async forms

    public func create(_ key: String, _ value: [UInt8]) async throws(NATSError) -> UInt64 {
        try await Self.awaiting { create(key, value, completion: $0) }
    }

    public func update(_ key: String, _ value: [UInt8], lastRevision: UInt64) async throws(NATSError) -> UInt64 {
        try await Self.awaiting { update(key, value, lastRevision: lastRevision, completion: $0) }
    }

    public func put(_ key: String, _ value: [UInt8]) async throws(NATSError) -> UInt64 {
        try await Self.awaiting { put(key, value, completion: $0) }
    }

    /// Returns once the bucket's stream answers: nats-server 2.10 on creates it before its
    /// replicas have elected a leader, and until then requests get `noResponders` or no answer.
    func waitUntilAnswering(timeout: Duration) async throws(NATSError) {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                _ = try await get("_ready")
                return
            } catch {
                // No leader yet: no responders, or (asked while it elects) no answer in time.
                switch error {
                case .noResponders, .timeout: guard ContinuousClock.now < deadline else { throw error }
                default: throw error
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    public func get(_ key: String) async throws(NATSError) -> Entry? {
        try await Self.awaiting { get(key, completion: $0) }
    }

    public func delete(_ key: String) async throws(NATSError) {
        try await Self.awaiting { delete(key, completion: $0) }
    }

    private static func awaiting<T: Sendable>(_ start: (@escaping @Sendable (Result<T, NATSError>) -> Void) -> Void) async throws(NATSError) -> T {
        let result = await withCheckedContinuation { continuation in start { continuation.resume(returning: $0) } }
        return try result.get()
    }
}
