/// A room's `action.applied` events that the webhook stream may not hold yet, as its replica
/// knows them, and the owner's copying of them into that stream.
///
/// Every replica adds the events of each log entry it applies and drops those an entry's mark
/// says are copied (`Tether-Webhooks-Copied`: the last event the owner had copied when it
/// appended). The room's snapshot carries what is pending, so a replica loaded from a snapshot
/// knows it too. The log may drop old entries; the events never depend on them.
///
/// The owner copies in order, one batch at a time, and marks its next entry with the last event
/// copied. A new owner copies everything pending from the start: what the old owner copied after
/// its last mark goes twice (receivers drop repeats by `webhook-id`), nothing goes never.
///
/// A value type, events in and actions out; `ClusteredRoom` performs the copies.
struct PendingWebhooks {
    private(set) var events: [WebhookDelivery] = []
    /// The owner's last copied event (this term): the next entry's mark.
    private(set) var copied: String?
    /// A batch is being written.
    private(set) var copying = false

    static let batchLimit = 100
    /// At most this many wait (a webhook stream that takes no writes for minutes); older ones
    /// are dropped, said loudly.
    static let limit = 100_000

    /// An event as marks name it: one event goes to several endpoints under one id.
    static func key(_ delivery: WebhookDelivery) -> String { "\(delivery.endpoint) \(delivery.event.id)" }

    /// A log entry applied: what its mark says is copied goes, its own events come. How many
    /// were dropped over `limit`.
    mutating func logged(_ added: [WebhookDelivery], mark: String?) -> Int {
        if let mark, let index = events.firstIndex(where: { Self.key($0) == mark }) {
            events.removeFirst(index + 1)
        }
        events += added
        let over = max(0, events.count - Self.limit)
        if over > 0 { events.removeFirst(over) }
        return over
    }

    /// The replica (re)loaded from a snapshot holding `pending`.
    mutating func restored(_ pending: [WebhookDelivery]) {
        events = pending
    }

    /// The replica started over, or ownership began or ended: nothing is copied by this term.
    mutating func newTerm() {
        copied = nil
        copying = false
    }

    /// The owner's next batch to write: the events after the last it copied (all of them when
    /// that one was dropped by a mark). Nil while a batch is in flight or nothing is new.
    mutating func nextBatch() -> [WebhookDelivery]? {
        guard !copying else { return nil }
        let start = copied.flatMap { mark in events.firstIndex { Self.key($0) == mark }.map { $0 + 1 } } ?? 0
        guard start < events.count else { return nil }
        copying = true
        return Array(events[start..<min(events.count, start + Self.batchLimit)])
    }

    /// The first `count` events of the batch are in the stream (all of it, or up to a failure).
    mutating func wrote(_ batch: [WebhookDelivery], count: Int) {
        copying = false
        if count > 0 { copied = Self.key(batch[count - 1]) }
    }
}
