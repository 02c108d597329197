/// The HTTP API's rate limit: each request costs one token of its caller's bucket
/// (`--max-actions-per-second`, `--action-burst`, as a WebSocket connection's actions), the
/// caller being its token's subject, else its address. One per socket shard, used on its thread.
final class APIRateLimits: @unchecked Sendable {
    private var buckets: [String: TokenBucket] = [:]
    /// Callers in the order first seen, to forget the oldest past `maxCallers`.
    private var order: [String] = []
    private var orderStart = 0
    static let maxCallers = 10_000

    func take(_ caller: String, rate: Double, burst: Int, now: ContinuousClock.Instant) -> Bool {
        if buckets[caller] == nil {
            if buckets.count >= Self.maxCallers { forgetOldest() }
            buckets[caller] = TokenBucket(rate: rate, capacity: burst, now: now)
            order.append(caller)
        }
        return buckets[caller]!.take(now: now)
    }

    private func forgetOldest() {
        while orderStart < order.count {
            let oldest = order[orderStart]
            orderStart += 1
            if buckets.removeValue(forKey: oldest) != nil { break }
        }
        if orderStart > 4096 {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }
}
