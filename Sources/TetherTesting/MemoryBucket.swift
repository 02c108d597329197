/// A KV bucket of a `MemoryCluster`: values with revisions, and expiry after `ttl`.
extension MemoryCluster {
    struct Bucket {
        struct Value {
            let bytes: [UInt8]
            let revision: UInt64
            let writtenAt: ContinuousClock.Instant
        }
        let ttl: Duration?
        var revision: UInt64 = 0
        /// Writes time out, as on a bucket whose stream has no leader that can commit them.
        var refusesWrites = false
        var values: [String: Value] = [:]

        /// The key's value unless it has expired (checked lazily, as `now` moves).
        func live(_ key: String, now: ContinuousClock.Instant) -> Value? {
            guard let value = values[key] else { return nil }
            if let ttl, value.writtenAt + ttl <= now { return nil }
            return value
        }

        mutating func write(_ key: String, _ bytes: [UInt8], now: ContinuousClock.Instant) -> UInt64 {
            revision += 1
            values[key] = Value(bytes: bytes, revision: revision, writtenAt: now)
            return revision
        }
    }
}
