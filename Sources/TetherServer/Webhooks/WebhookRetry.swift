/// What one delivery attempt means for its event: delivered, tried again later (exponential
/// backoff with full jitter, a receiver's Retry-After honoured), dead-lettered once it is older
/// than the endpoint's `retry-for`, or the endpoint disabled (410 Gone). Pure: a table tests it.
enum WebhookRetry {
    static let firstDelay = 2.0
    static let maxDelay = 3_600.0

    enum Outcome: Equatable {
        /// The receiver answered (a redirect too: never followed).
        case status(Int, retryAfter: Int?)
        /// No answer: refused, timed out, reset.
        case failed(String)
    }

    enum Decision: Equatable {
        case delivered
        case retry(afterSeconds: Double, reason: String)
        case dead(reason: String)
        case disable(reason: String)
    }

    /// `attempts`: this one included. `age`: since the event was recorded. `random`: in [0, 1).
    static func decide(_ outcome: Outcome, attempts: Int, age: Double, retryFor: Double, random: Double) -> Decision {
        let reason: String
        var floor = 0.0
        switch outcome {
        case .status(let status, _) where (200..<300).contains(status):
            return .delivered
        case .status(410, _):
            return .disable(reason: "the receiver answered 410 Gone")
        case .status(let status, let retryAfter):
            reason = "HTTP \(status)"
            if status == 429 || status == 503, let retryAfter { floor = min(Double(max(0, retryAfter)), maxDelay) }
        case .failed(let why):
            reason = why
        }
        guard age < retryFor else { return .dead(reason: "\(reason), still failing after \(Int(retryFor)) s") }
        let ceiling = min(maxDelay, firstDelay * Double(1 << min(max(attempts - 1, 0), 20)))
        return .retry(afterSeconds: max(floor, random * ceiling), reason: reason)
    }
}
