/// Allows `rate` events per second on average and bursts of up to `capacity`.
struct TokenBucket {
    let rate: Double
    let capacity: Double
    private var tokens: Double
    private var refilled: ContinuousClock.Instant

    init(rate: Double, capacity: Int, now: ContinuousClock.Instant) {
        self.rate = rate
        self.capacity = Double(capacity)
        tokens = Double(capacity)
        refilled = now
    }

    /// Takes one token if there is one.
    mutating func take(now: ContinuousClock.Instant) -> Bool {
        let elapsed = now - refilled
        refilled = now
        tokens = min(capacity, tokens + rate * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
