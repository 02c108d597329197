import Synchronization

/// One event bound for one endpoint.
struct WebhookDelivery: Sendable, Equatable {
    let endpoint: String
    let event: WebhookEvent
}

/// An outbox row: a delivery waiting to be sent, retried or dead-lettered.
struct WebhookOutboxRow: Sendable, Equatable {
    var seq: Int
    var delivery: WebhookDelivery
    /// Seconds since 1970.
    var created: Int
    var attempts = 0
    var nextAttempt: Int
}

/// An endpoint's figures, for `GET /webhooks`, the dashboard and metrics.
struct WebhookEndpointStatus: Sendable, Equatable {
    var pending = 0
    var dead = 0
    var lastError: String?
    /// Seconds since 1970 of that error.
    var lastErrorAt: Int?
}

/// Where deliveries wait: the room store's table on a node with a data directory (a step's
/// `action.applied` written in the step's own transaction), memory otherwise (lost with the
/// process: at most once across restarts).
protocol WebhookOutbox: AnyObject, Sendable {
    func add(_ deliveries: [WebhookDelivery], now: Int)
    /// Up to `limit` due rows, oldest first, only the oldest pending row of each (endpoint, room):
    /// one room's events reach an endpoint in order, and a failing one holds back only its room.
    func due(now: Int, limit: Int) -> [WebhookOutboxRow]
    func delivered(_ seq: Int)
    func retry(_ seq: Int, attempts: Int, at time: Int, error: String, now: Int)
    func dead(_ seq: Int, attempts: Int, error: String, now: Int)
    func status() -> [String: WebhookEndpointStatus]
    /// Dead rows of `endpoint` pending again now; how many.
    func revive(endpoint: String, now: Int) -> Int
}

/// The outbox of a node without a data directory.
final class MemoryWebhookOutbox: WebhookOutbox {
    private struct State {
        var rows: [Int: WebhookOutboxRow] = [:]
        var dead: [Int: WebhookOutboxRow] = [:]
        var nextSeq = 1
        var statuses: [String: WebhookEndpointStatus] = [:]
    }
    private let state = Mutex(State())
    /// Past it new events are dropped (and counted): a dead receiver must not fill memory.
    let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    func add(_ deliveries: [WebhookDelivery], now: Int) {
        state.withLock { state in
            for delivery in deliveries where state.rows.count < capacity {
                state.rows[state.nextSeq] = WebhookOutboxRow(seq: state.nextSeq, delivery: delivery, created: now, nextAttempt: now)
                state.nextSeq += 1
            }
        }
    }

    func due(now: Int, limit: Int) -> [WebhookOutboxRow] {
        state.withLock { state in
            var heads: [String: WebhookOutboxRow] = [:]
            for row in state.rows.values {
                let key = row.delivery.endpoint + "\u{0}" + row.delivery.event.room
                if let head = heads[key], head.seq < row.seq { continue }
                heads[key] = row
            }
            return heads.values.filter { $0.nextAttempt <= now }.sorted { $0.seq < $1.seq }.prefix(limit).map { $0 }
        }
    }

    func delivered(_ seq: Int) { state.withLock { _ = $0.rows.removeValue(forKey: seq) } }

    func retry(_ seq: Int, attempts: Int, at time: Int, error: String, now: Int) {
        state.withLock { state in
            guard var row = state.rows[seq] else { return }
            row.attempts = attempts
            row.nextAttempt = time
            state.rows[seq] = row
            state.statuses[row.delivery.endpoint, default: .init()].lastError = error
            state.statuses[row.delivery.endpoint, default: .init()].lastErrorAt = now
        }
    }

    func dead(_ seq: Int, attempts: Int, error: String, now: Int) {
        state.withLock { state in
            guard var row = state.rows.removeValue(forKey: seq) else { return }
            row.attempts = attempts
            state.dead[seq] = row
            state.statuses[row.delivery.endpoint, default: .init()].lastError = error
            state.statuses[row.delivery.endpoint, default: .init()].lastErrorAt = now
        }
    }

    func status() -> [String: WebhookEndpointStatus] {
        state.withLock { state in
            var statuses = state.statuses.mapValues { WebhookEndpointStatus(lastError: $0.lastError, lastErrorAt: $0.lastErrorAt) }
            for row in state.rows.values { statuses[row.delivery.endpoint, default: .init()].pending += 1 }
            for row in state.dead.values { statuses[row.delivery.endpoint, default: .init()].dead += 1 }
            return statuses
        }
    }

    func revive(endpoint: String, now: Int) -> Int {
        state.withLock { state in
            let revived = state.dead.values.filter { $0.delivery.endpoint == endpoint }
            for var row in revived {
                state.dead[row.seq] = nil
                row.attempts = 0
                row.nextAttempt = now
                state.rows[row.seq] = row
            }
            return revived.count
        }
    }
}
