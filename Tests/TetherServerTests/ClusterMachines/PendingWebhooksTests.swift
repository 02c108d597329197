import Testing
@testable import TetherServer

/// A room's webhook events between its log and the webhook stream: what replicas keep and what
/// the owner copies, driven by events.
@Suite("Cluster state machines: pending webhook events")
struct PendingWebhooksTests {
    static func event(_ version: Int, endpoint: String = "e") -> WebhookDelivery {
        WebhookDelivery(endpoint: endpoint, event: WebhookEvent(type: .actionApplied, room: "r", id: "v\(version)", body: []))
    }

    static func versions(_ deliveries: [WebhookDelivery]?) -> [String] { deliveries?.map(\.event.id) ?? [] }

    @Test func anEntrysMarkDropsWhatTheOwnerCopiedAndKeepsTheRest() {
        var pending = PendingWebhooks()
        _ = pending.logged([Self.event(1), Self.event(2)], mark: nil)
        _ = pending.logged([Self.event(3)], mark: nil)
        #expect(Self.versions(pending.events) == ["v1", "v2", "v3"])
        _ = pending.logged([Self.event(4)], mark: PendingWebhooks.key(Self.event(2)))
        #expect(Self.versions(pending.events) == ["v3", "v4"], "through the mark, not past it")
        _ = pending.logged([], mark: PendingWebhooks.key(Self.event(2)))
        #expect(Self.versions(pending.events) == ["v3", "v4"], "a mark already passed changes nothing")
    }

    @Test func oneEventForTwoEndpointsIsMarkedPerEndpoint() {
        var pending = PendingWebhooks()
        _ = pending.logged([Self.event(1, endpoint: "a"), Self.event(1, endpoint: "b")], mark: nil)
        _ = pending.logged([], mark: PendingWebhooks.key(Self.event(1, endpoint: "a")))
        #expect(pending.events.map(\.endpoint) == ["b"])
    }

    @Test func theOwnerCopiesInOrderOneBatchAtATime() {
        var pending = PendingWebhooks()
        _ = pending.logged([Self.event(1), Self.event(2)], mark: nil)
        let first = pending.nextBatch()
        #expect(Self.versions(first) == ["v1", "v2"])
        _ = pending.logged([Self.event(3)], mark: nil)
        #expect(pending.nextBatch() == nil, "one batch in flight")
        pending.wrote(first!, count: 2)
        #expect(pending.copied == PendingWebhooks.key(Self.event(2)), "the next entry's mark")
        let second = pending.nextBatch()
        #expect(Self.versions(second) == ["v3"], "what came meanwhile, not again what was copied")
        pending.wrote(second!, count: 0)
        #expect(Self.versions(pending.nextBatch()) == ["v3"], "a failed write is tried again")
    }

    @Test func aPartlyWrittenBatchGoesOnAfterItsLastStoredEvent() {
        var pending = PendingWebhooks()
        _ = pending.logged((1...3).map { Self.event($0) }, mark: nil)
        let batch = pending.nextBatch()!
        pending.wrote(batch, count: 1)
        #expect(Self.versions(pending.nextBatch()) == ["v2", "v3"])
    }

    @Test func aNewOwnerCopiesEverythingPendingAgain() {
        var pending = PendingWebhooks()
        _ = pending.logged([Self.event(1), Self.event(2)], mark: nil)
        pending.wrote(pending.nextBatch()!, count: 2)
        _ = pending.logged([Self.event(3)], mark: PendingWebhooks.key(Self.event(1)))
        // The owner died before an entry said v2 was copied: the next one copies it again.
        pending.newTerm()
        #expect(Self.versions(pending.nextBatch()) == ["v2", "v3"])
    }

    @Test func aMarkThatDroppedTheLastCopiedEventLeavesOnlyNewOnes() {
        var pending = PendingWebhooks()
        _ = pending.logged([Self.event(1)], mark: nil)
        pending.wrote(pending.nextBatch()!, count: 1)
        _ = pending.logged([Self.event(2)], mark: PendingWebhooks.key(Self.event(1)))
        #expect(Self.versions(pending.nextBatch()) == ["v2"])
    }

    @Test func aSnapshotRestoresWhatWasPending() {
        var pending = PendingWebhooks()
        _ = pending.logged([Self.event(9)], mark: nil)
        pending.restored([Self.event(4), Self.event(5)])
        #expect(Self.versions(pending.events) == ["v4", "v5"])
        let snapshot = ClusterSnapshot(epoch: "E", version: 5, sequence: 7, state: .null, webhooks: pending.events)
        #expect(Self.versions(ClusterSnapshot(snapshot.encoded)?.webhooks) == ["v4", "v5"], "carried by the snapshot")
    }

    @Test func beyondTheLimitTheOldestAreDroppedAndCounted() {
        var pending = PendingWebhooks()
        _ = pending.logged((1...PendingWebhooks.limit).map { Self.event($0) }, mark: nil)
        #expect(pending.logged([Self.event(0), Self.event(-1)], mark: nil) == 2)
        #expect(pending.events.count == PendingWebhooks.limit && pending.events.first?.event.id == "v3")
    }

    @Test func aLogEntryCarriesItsMark() {
        var entry = LogEntry(kind: .patch, epoch: "E", from: 1, version: 2, node: "a", term: "T", frame: [1], webhooks: [Self.event(2)])
        entry.webhooksCopied = PendingWebhooks.key(Self.event(1))
        let read = LogEntry(headers: entry.headers, data: entry.data)
        #expect(read?.webhooksCopied == "e v1" && Self.versions(read?.webhooks) == ["v2"])
    }
}
