import Foundation
import Logging
import Synchronization
import TetherJSON
import TetherNATS

/// The webhook outbox of a cluster: the stream `TETHER_WEBHOOKS`, delivered by one node.
///
/// - A step's `action.applied` events travel in its log entry (`LogEntry.webhooks`): acked with
///   the step. The room's owner then copies them into the stream (`PendingWebhooks`, `write`).
///   Other events (members, rooms) are written by the node they happen on, where they happen.
///   Each node writes one event at a time, checked against the stream's last sequence.
/// - One node at a time holds the key `tether.webhooks` in the owners bucket (renewed every third
///   of a lease; a dead holder's key expires; an unanswered renewal keeps it). The holder reads
///   the stream into memory (`MemoryWebhookOutbox`, keyed by stream sequence) for the node's
///   `WebhookDeliverer`, and deletes each delivered message (again each round until NATS confirms
///   it). A dead event moves to `tether.webhooks.dead.ENDPOINT`.
/// - Every other node's outbox is empty: its deliverer sends nothing.
///
/// A holder that dies loses nothing: the next one reads the stream. Repeats are possible, as
/// always with webhooks; receivers drop them by `webhook-id`.
final class ClusterWebhookOutbox: WebhookOutbox {
    static let stream = "TETHER_WEBHOOKS"
    static let leaseKey = "tether.webhooks"
    static let pollInterval: Duration = .milliseconds(200)

    private struct State {
        /// The lease's revision while this node holds it.
        var holding: UInt64?
        /// Who held it when this node last looked (for `GET /webhooks` elsewhere).
        var holder: String?
        var lastRenewal: ContinuousClock.Instant?
        /// The last sequence of the webhook stream read into `mirror`.
        var lastRead: UInt64 = 0
    }

    /// Events to write to the stream, in order, one batch at a time; `done` hears how many of
    /// the batch's first events are stored.
    private struct Write {
        let deliveries: [WebhookDelivery]
        let done: @Sendable (Int) -> Void
    }

    private let node: ClusterNode
    private let mirror = MemoryWebhookOutbox(capacity: 1_000_000)
    private let state = Mutex(State())
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let wake = Mutex<(@Sendable () -> Void)?>(nil)
    private let configured = Mutex<@Sendable () -> Bool>({ false })
    /// The webhook stream's last sequence as this node last saw it (writes are checked against it).
    private let streamEnd = Mutex<UInt64>(0)
    /// Messages of the stream this node is done with (delivered, moved) whose deletion NATS has
    /// not confirmed: deleted again each round and never read back into the queue meanwhile (a
    /// NATS fault refused thousands of deletes at once, and each came back as a repeat).
    private let removals = Mutex<Set<UInt64>>([])
    private let writes = Mutex<(queue: [Write], running: Bool)>(([], false))
    private var logger: Logger { node.logger }

    init(node: ClusterNode) {
        self.node = node
    }

    /// Whether this node delivers the cluster's webhooks now.
    var isDelivering: Bool { state.withLock { $0.holding != nil } }

    var deliveringNode: String? { state.withLock { $0.holding != nil ? node.name : $0.holder } }

    /// Runs the holder's loop while `configured` says some endpoint is configured (nothing to read
    /// or deliver otherwise).
    func start(configured: @escaping @Sendable () -> Bool, wakingDeliverer wake: @escaping @Sendable () -> Void) {
        self.wake.withLock { $0 = wake }
        self.configured.withLock { $0 = configured }
        task.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await run() }
        }
    }

    func stop() async {
        let running = task.withLock { task in defer { task = nil }; return task }
        running?.cancel()
        await running?.value
        if state.withLock({ $0.holding != nil }) {
            await withCheckedContinuation { continuation in node.owners.delete(Self.leaseKey) { _ in continuation.resume() } }
        }
    }

    // MARK: The holder's loop

    private func run() async {
        while !Task.isCancelled {
            guard configured.withLock({ $0 })() else {
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            await renewLease()
            if state.withLock({ $0.holding != nil }) { await readStream() }
            retryRemovals()
            try? await Task.sleep(for: Self.pollInterval)
        }
    }

    /// Takes the lease if it is free, renews it every third of a lease; on taking it, reads the
    /// stream from its start.
    private func renewLease() async {
        let (holding, last) = state.withLock { ($0.holding, $0.lastRenewal) }
        let now = ContinuousClock.now
        if holding != nil, let last, now - last < node.lease / 3 { return }
        let value = Array(node.name.utf8)
        let result: Result<UInt64, NATSError>
        if let holding {
            result = await renewed(holding, value: value)
            if case .failure(let error) = result {
                logger.warning("cluster: webhooks: lost the delivery lease (\(error)); another node delivers them")
                mirror.removeAll()
                state.withLock { $0 = State() }
                return
            }
        } else {
            var attempt = await call { self.node.owners.create(Self.leaseKey, value, completion: $0) }
            if case .failure(.keyExists) = attempt,
               case .success(let entry?) = await call({ self.node.owners.get(Self.leaseKey, completion: $0) }) {
                state.withLock { $0.holder = String(decoding: entry.value, as: UTF8.self) }
                // Ours from before a restart under the same node name.
                if entry.value == value {
                    attempt = await call { self.node.owners.update(Self.leaseKey, value, lastRevision: entry.revision, completion: $0) }
                }
            }
            result = attempt
            guard case .success = result else { return }
            mirror.removeAll()
            state.withLock { $0 = State() }
            logger.notice("cluster: webhooks: this node delivers them now")
        }
        if case .success(let revision) = result {
            state.withLock { state in
                state.holding = revision
                state.lastRenewal = now
            }
        }
    }

    /// The lease renewed at a new revision, or lost: another node holds the key. A renewal the
    /// bucket did not answer keeps the lease (its stream electing a leader, for seconds on
    /// nats-server 2.9: a holder that stopped then left the stream undelivered while it went
    /// on); a refused one asks who holds the key: this node (its own write timed out after it was
    /// stored), nobody (it expired meanwhile: create it again), or another node.
    private func renewed(_ holding: UInt64, value: [UInt8]) async -> Result<UInt64, NATSError> {
        let result = await call { self.node.owners.update(Self.leaseKey, value, lastRevision: holding, completion: $0) }
        guard case .failure(let error) = result else { return result }
        guard case .wrongRevision = error else {
            logger.debug("cluster: webhooks: delivery lease not renewed (\(error)); still delivering")
            return .success(holding)
        }
        switch await call({ self.node.owners.get(Self.leaseKey, completion: $0) }) {
        case .success(let entry?) where entry.value == value: return .success(entry.revision)
        case .success(nil): return await call { self.node.owners.create(Self.leaseKey, value, completion: $0) }
        case .success: return .failure(error)
        case .failure: return .success(holding)  // not answered: try again at the next renewal
        }
    }

    /// Reads what the webhook stream holds after the last read into the deliverer's queue.
    private func readStream() async {
        let after = state.withLock { $0.lastRead }
        let read = Mutex<[StoredMessage]>([])
        _ = await call { completion in
            self.node.log.read(stream: Self.stream, subject: "tether.webhooks.>", from: after + 1,
                               handler: { message in read.withLock { $0.append(message) } }, completion: completion)
        }
        let messages = read.withLock { $0 }
        guard let last = messages.last?.sequence else { return }
        let removing = removals.withLock { $0 }
        for message in messages where !removing.contains(message.sequence) {
            guard let json = try? JSONParser().parse(message.data), let delivery = json["delivery"].flatMap(WebhookDelivery.init(json:)) else {
                logger.warning("cluster: webhooks: an unreadable message at \(message.sequence) in \(Self.stream); deleted")
                remove(message.sequence)
                continue
            }
            let row = WebhookOutboxRow(seq: Int(message.sequence), delivery: delivery, created: json["created"]?.intValue ?? Self.now,
                                       attempts: json["attempts"]?.intValue ?? 0, nextAttempt: Self.now)
            mirror.insert(row, dead: message.subject.hasPrefix("tether.webhooks.dead."))
        }
        state.withLock { $0.lastRead = max($0.lastRead, last) }
        wake.withLock { $0 }?()
    }

    // MARK: Writing

    /// Writes `deliveries` to the stream in order after what this node was given before;
    /// `done` hears how many of the first were stored (all, or up to the first failure).
    func write(_ deliveries: [WebhookDelivery], then done: @escaping @Sendable (Int) -> Void) {
        let start = writes.withLock { writes in
            writes.queue.append(Write(deliveries: deliveries, done: done))
            defer { writes.running = true }
            return !writes.running
        }
        if start { Task { [self] in await drainWrites() } }
    }

    /// One writer per node: its writes do not race each other for the stream's next place.
    private func drainWrites() async {
        while let next = writes.withLock({ writes -> Write? in
            guard !writes.queue.isEmpty else {
                writes.running = false
                return nil
            }
            return writes.queue.removeFirst()
        }) {
            var count = 0
            let now = Self.now
            for delivery in next.deliveries {
                guard await publish(delivery, created: now) else { break }
                count += 1
            }
            next.done(count)
        }
    }

    private func write(_ deliveries: [WebhookDelivery]) async -> Int {
        await withCheckedContinuation { continuation in write(deliveries) { continuation.resume(returning: $0) } }
    }

    // MARK: WebhookOutbox

    /// Events that are not part of a step (members, rooms): into the stream from this node.
    func add(_ deliveries: [WebhookDelivery], now: Int) {
        Task { [self] in
            var left = deliveries[...]
            for tries in 1... {
                left = left.dropFirst(await write(Array(left)))
                guard let first = left.first else { return }
                guard tries < 5 else {
                    logger.error("cluster: webhooks: \(left.count) events (the first \(first.event.id) for \(first.endpoint)) lost: the webhook stream took no write for 5 tries")
                    return
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    func due(now: Int, limit: Int) -> [WebhookOutboxRow] { mirror.due(now: now, limit: limit) }

    func delivered(_ seq: Int) {
        mirror.delivered(seq)
        remove(UInt64(seq))
    }

    /// Deletes a message this node is done with, again each round until NATS confirms it.
    private func remove(_ sequence: UInt64) {
        removals.withLock { _ = $0.insert(sequence) }
        node.log.delete(stream: Self.stream, sequence: sequence) { [self] result in
            if case .success = result { removals.withLock { _ = $0.remove(sequence) } }
        }
    }

    private func retryRemovals() {
        let pending = removals.withLock { $0 }
        guard !pending.isEmpty else { return }
        logger.debug("cluster: webhooks: deleting \(pending.count) handled events again")
        for sequence in pending.prefix(1_000) { remove(sequence) }
    }

    func retry(_ seq: Int, attempts: Int, at time: Int, error: String, now: Int) {
        mirror.retry(seq, attempts: attempts, at: time, error: error, now: now)
    }

    /// Moved to the endpoint's dead subject; read back from there as dead.
    func dead(_ seq: Int, attempts: Int, error: String, now: Int) {
        guard let row = mirror.remove(seq) else { return }
        mirror.noteError(endpoint: row.delivery.endpoint, error, at: now)
        Task { [self] in
            guard await publish(row.delivery, created: row.created, attempts: attempts, dead: true, id: "dead-\(seq)") else { return }
            remove(UInt64(seq))
        }
    }

    func status() -> [String: WebhookEndpointStatus] { mirror.status() }

    /// Each dead event of `endpoint` published as pending again (read back as such).
    func revive(endpoint: String, now: Int) -> Int {
        let rows = mirror.removeDead(endpoint: endpoint)
        Task { [self] in
            for row in rows where await publish(row.delivery, created: now, id: "revived-\(row.seq)") {
                remove(UInt64(row.seq))
            }
        }
        return rows.count
    }

    /// One event into the stream; whether it is stored. Checked as the rooms' log is: against
    /// the stream's last sequence, with one message id per place (nats-server 2.9 let two writers
    /// on different servers both be acked at one sequence, and kept one: Jepsen's check 13). A
    /// writer told `duplicate` reads the place back: its own message (a retry), or another's.
    private func publish(_ delivery: WebhookDelivery, created: Int, attempts: Int = 0, dead: Bool = false, id: String = "") async -> Bool {
        let data = JSON.object(["delivery": delivery.json, "created": .int(created), "attempts": .int(attempts),
                                "copy": .string(id)]).encoded()
        let subject = "tether.webhooks.\(dead ? "dead" : "pending").\(delivery.endpoint)"
        for _ in 0..<10 {
            // The server checks no expected sequence of 0: learn the stream's end first.
            if streamEnd.withLock({ $0 == 0 }) { await readStreamEnd() }
            let expected = streamEnd.withLock { $0 }
            let result = await call { completion in
                self.node.log.publish(subject, data, headers: NATSHeaders(), messageID: "after-\(expected)", expectedLastSequence: expected,
                                      timeout: .seconds(2), completion: completion)
            }
            switch result {
            case .success(let sequence):
                streamEnd.withLock { $0 = max($0, sequence) }
                return true
            case .failure(.duplicate(let sequence)):
                if await message(at: sequence)?.data == data { return true }
                // Another writer's id at this place: this node's idea of the end is stale, maybe by
                // thousands of places (each with its id taken): learn the end, not the next place.
                await readStreamEnd()
                streamEnd.withLock { $0 = max($0, sequence) }
            case .failure(.wrongLastSequence(let current?)):
                streamEnd.withLock { $0 = current }
            case .failure(.wrongLastSequence(nil)):
                await readStreamEnd()
            case .failure(let error):
                logger.warning("cluster: webhooks: cannot write event \(delivery.event.id) to \(Self.stream): \(error)")
                return false
            }
        }
        return false
    }

    /// The stream's last sequence from its info, when a refusal did not name it (reading
    /// messages would not see a deleted tail).
    private func readStreamEnd() async {
        do {
            let last = try await node.log.lastSequence(stream: Self.stream)
            streamEnd.withLock { $0 = last }
        } catch {
            logger.warning("cluster: webhooks: cannot read \(Self.stream)'s end: \(error)")
        }
    }

    private func message(at sequence: UInt64) async -> StoredMessage? {
        let found = Mutex<StoredMessage?>(nil)
        _ = await call { completion in
            self.node.log.read(stream: Self.stream, subject: "tether.webhooks.>", from: sequence,
                               handler: { message in found.withLock { if $0 == nil { $0 = message } } }, completion: completion)
        }
        return found.withLock { $0 }.flatMap { $0.sequence == sequence ? $0 : nil }
    }

    private func call<T: Sendable>(_ start: @escaping (@escaping @Sendable (Result<T, NATSError>) -> Void) -> Void) async -> Result<T, NATSError> {
        await withCheckedContinuation { continuation in start { continuation.resume(returning: $0) } }
    }

    private static var now: Int { Int(Date().timeIntervalSince1970) }
}
