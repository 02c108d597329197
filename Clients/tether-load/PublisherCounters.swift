/// Counters of the publisher shard. Monotonic except `ready`.
struct PublisherCounters: Sendable {
    var ready = 0
    var connectFailures = 0
    var actionsSent = 0
    /// Sum over sent actions of the subscribers in the action's room: deliveries offered.
    var deliveriesOffered = 0
    var acks = 0
    /// Acks for no outstanding action, or naming another room.
    var ackMismatches = 0
    var errors = 0
    var protocolErrors = 0
    var disconnects = 0
    /// Actions queued because the publisher's socket was choked (the server reads slowly).
    var queuedWhenChoked = 0

    var outstanding: Int { actionsSent - acks - errors }
}
