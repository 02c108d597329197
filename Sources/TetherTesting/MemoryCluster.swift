import Synchronization
import TetherNATS
import TetherServer

/// The cluster's message system in memory, for tests: several nodes in one process, each with a
/// connection of its own, on a virtual clock. It keeps the rules of NATS and JetStream that the
/// cluster's safety rests on (checked appends, message ids, republish with sequence headers, KV
/// revisions and TTL) and lets a test cause faults (`disconnect`). centrifuge's `MemoryBroker`
/// beside its NATS and Redis brokers is the model.
///
/// Checked `Sendable`: all mutable state is in one `Mutex`. Handlers and completions are queued
/// under it and handed to the nodes' `deliver` after unlocking, one caller at a time, in the
/// order they were produced.
public final class MemoryCluster: Sendable {
    typealias Deliver = @Sendable (@escaping @Sendable () -> Void) -> Void

    private let clock: any ServerClock
    private let duplicateWindow: Duration
    private let republish: @Sendable (String) -> String?
    private let state = Mutex(State())

    /// `republish` maps a log subject to the subject its stored messages are republished on (nil:
    /// none), as a stream's `RePublish`; `duplicateWindow` is how long a message id is remembered
    /// (JetStream's duplicate window).
    public init(clock: any ServerClock, duplicateWindow: Duration = .seconds(120),
                republish: @escaping @Sendable (String) -> String?) {
        self.clock = clock
        self.duplicateWindow = duplicateWindow
        self.republish = republish
    }

    /// One node's connection. Every handler and completion for this node runs through `deliver`
    /// (a test passes a queue of the node's scheduler, so none runs inside a call the node makes),
    /// in the order produced, never while MemoryCluster holds its lock. Connecting a name again (a
    /// restarted node) makes a connection of its own; `disconnect` and `reconnect` act on every
    /// connection of the name.
    public func connect(node: String, deliver: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) -> MemoryClusterConnection {
        let link = state.withLock { state in
            state.nextID += 1
            state.links[state.nextID] = Link(node: node, deliver: deliver)
            return state.nextID
        }
        return MemoryClusterConnection(cluster: self, node: node, link: link)
    }

    /// Fault: the node's connection is lost (as when NATS drops a client): its subscriptions get
    /// nothing, its calls fail with `NATSError.notConnected`, its requests in flight fail with
    /// `.disconnected`, and requests from others no longer reach its subscriptions
    /// (`noResponders` if nobody else subscribes).
    public func disconnect(_ node: String) {
        let timers = state.withLock { state -> [any ServerTimer] in
            for (id, link) in state.links where link.node == node { state.links[id]?.connected = false }
            var timers: [any ServerTimer] = []
            for id in state.requests.keys.sorted() where state.links[state.requests[id]!.link]!.node == node {
                let request = state.requests.removeValue(forKey: id)!
                state.outbox.append((state.links[request.link]!.deliver, { request.completion(.failure(.disconnected)) }))
                if let timer = request.timer { timers.append(timer) }
            }
            return timers
        }
        timers.forEach { $0.cancel() }
        flush()
    }

    /// The node's connection is back: its subscriptions receive again (what was published
    /// meanwhile is lost, as in core NATS).
    public func reconnect(_ node: String) {
        state.withLock { state in
            for (id, link) in state.links where link.node == node { state.links[id]?.connected = true }
        }
    }

    /// Fault: the next `count` messages the log republishes are not delivered to `node`, as
    /// when its new subscription's interest has not yet reached the NATS server that republishes.
    public func loseRepublished(to node: String, count: Int = 1) {
        state.withLock { $0.republishedToLose[node, default: 0] += count }
    }

    /// For tests: the messages stored on a log subject, in order.
    public func storedMessages(subject: String) -> [StoredMessage] {
        state.withLock { $0.logs[subject]?.messages ?? [] }
    }

    // MARK: State

    private struct Link {
        let node: String
        let deliver: Deliver
        var connected = true
    }

    private struct Subscriber {
        let link: Int
        let queueGroup: String?
        let handler: @Sendable (NATSMessage) -> Void
    }

    private struct PendingRequest {
        let link: Int
        let subject: String
        let replySubject: String
        let completion: @Sendable (Result<NATSMessage, NATSError>) -> Void
        /// Nil until `startTimer` has returned.
        var timer: (any ServerTimer)?
    }

    private struct SubjectLog {
        var messages: [StoredMessage] = []
        /// Message id → where it was stored and when (remembered for `duplicateWindow`).
        var ids: [String: (sequence: UInt64, at: ContinuousClock.Instant)] = [:]
    }

    private struct State {
        var nextID = 0
        var links: [Int: Link] = [:]
        var subscribers: [Int: Subscriber] = [:]
        /// Subscription ids per subject, in subscription order (deliveries are deterministic).
        var subjects: [String: [Int]] = [:]
        var requests: [Int: PendingRequest] = [:]
        var logs: [String: SubjectLog] = [:]
        /// One counter for every log subject, as a stream has (callers compare within a subject).
        var sequence: UInt64 = 0
        var buckets: [String: Bucket] = [:]
        /// Whether log appends time out (`refuseAppends`).
        var appendsRefused = false
        /// Node → republished messages still to lose on the way to it (`loseRepublished`).
        var republishedToLose: [String: Int] = [:]
        /// Work for the nodes' `deliver`, in the order produced; `flush` hands it out.
        var outbox: [(deliver: Deliver, work: @Sendable () -> Void)] = []
        var flushing = false

        func isConnected(_ link: Int) -> Bool { links[link]?.connected == true }

        /// Messages of each queue group so far, per subject: picks its members in turn.
        var queuePicks: [String: Int] = [:]

        /// The subscriptions of `subject` whose connection is up that get its next message:
        /// every one without a queue group, and one member of each group, in turn (NATS picks one
        /// at random; taking turns keeps runs deterministic and still reaches every member).
        mutating func receivers(_ subject: String) -> [(id: Int, subscriber: Subscriber)] {
            let connected = (subjects[subject] ?? []).compactMap { id in
                subscribers[id].flatMap { isConnected($0.link) ? (id, $0) : nil }
            }
            var chosen: [(id: Int, subscriber: Subscriber)] = []
            var groups: [String: [(id: Int, subscriber: Subscriber)]] = [:]
            for receiver in connected {
                if let group = receiver.1.queueGroup { groups[group, default: []].append(receiver) } else { chosen.append(receiver) }
            }
            for (group, members) in groups.sorted(by: { $0.key < $1.key }) {
                let key = subject + " " + group
                let pick = queuePicks[key, default: 0]
                queuePicks[key] = pick + 1
                chosen.append(members[pick % members.count])
            }
            return chosen
        }
    }

    /// Hands queued work to the nodes' `deliver` outside the lock. One caller flushes at a time
    /// (the others leave their work to it), so `deliver` sees work in the order it was produced,
    /// and work produced inside a `deliver` waits until that call returns.
    private func flush() {
        let claimed = state.withLock { state -> Bool in
            guard !state.flushing else { return false }
            state.flushing = true
            return true
        }
        guard claimed else { return }
        while true {
            let batch = state.withLock { state in
                defer { state.outbox.removeAll() }
                if state.outbox.isEmpty { state.flushing = false }
                return state.outbox
            }
            guard !batch.isEmpty else { return }
            for item in batch { item.deliver(item.work) }
        }
    }

    /// Queues `message` for each connected subscriber of its subject. A subscription that is gone
    /// by the time its node runs the delivery gets nothing (as the C client drops a closed
    /// subscription's pending messages).
    private func fanOut(_ state: inout State, _ message: NATSMessage, republished: Bool = false) {
        for (id, subscriber) in state.receivers(message.subject) {
            let node = state.links[subscriber.link]!.node
            if republished, let lose = state.republishedToLose[node], lose > 0 {
                state.republishedToLose[node] = lose - 1
                continue
            }
            state.outbox.append((state.links[subscriber.link]!.deliver, { [weak self] in
                guard let self, self.state.withLock({ $0.subscribers[id] != nil }) else { return }
                subscriber.handler(message)
            }))
        }
    }

    /// Runs `body` under the lock if `link` is connected (else `notConnected`) and queues the
    /// completion with its result for the link's node.
    private func complete<T: Sendable>(_ link: Int, _ completion: @escaping @Sendable (Result<T, NATSError>) -> Void,
                                       _ body: (inout State) -> Result<T, NATSError>) {
        state.withLock { state in
            let result = state.isConnected(link) ? body(&state) : .failure(.notConnected)
            state.outbox.append((state.links[link]!.deliver, { completion(result) }))
        }
        flush()
    }

    // MARK: Messaging

    func subscribe(_ link: Int, _ subject: String, queueGroup: String?, handler: @escaping @Sendable (NATSMessage) -> Void) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.subscribers[state.nextID] = Subscriber(link: link, queueGroup: queueGroup, handler: handler)
            state.subjects[subject, default: []].append(state.nextID)
            return state.nextID
        }
    }

    func unsubscribe(_ id: Int, _ subject: String) {
        state.withLock { state in
            guard state.subscribers.removeValue(forKey: id) != nil else { return }
            state.subjects[subject]?.removeAll { $0 == id }
            if state.subjects[subject]?.isEmpty == true { state.subjects[subject] = nil }
        }
    }

    func publish(_ link: Int, _ subject: String, _ data: [UInt8]) throws(NATSError) {
        try state.withLock { state throws(NATSError) in
            guard state.isConnected(link) else { throw .notConnected }
            fanOut(&state, NATSMessage(subject: subject, data: data))
        }
        flush()
    }

    func request(_ link: Int, _ subject: String, _ data: [UInt8], timeout: Duration,
                             completion: @escaping @Sendable (Result<NATSMessage, NATSError>) -> Void) {
        let pending = state.withLock { state -> Int? in
            let requester = state.links[link]!
            let receivers = state.receivers(subject)
            guard requester.connected, !receivers.isEmpty else {
                let error: NATSError = requester.connected ? .noResponders(subject: subject) : .notConnected
                state.outbox.append((requester.deliver, { completion(.failure(error)) }))
                return nil
            }
            state.nextID += 1
            let id = state.nextID
            let replySubject = "_INBOX.\(requester.node).\(id)"
            state.requests[id] = PendingRequest(link: link, subject: subject, replySubject: replySubject, completion: completion)
            for (subscriptionID, subscriber) in receivers {
                let respond = { @Sendable [weak self] (_: String, answer: [UInt8], headers: NATSHeaders?) throws(NATSError) in
                    guard let self else { throw .closed }
                    try self.answer(id, from: subscriber.link, answer, headers: headers)
                }
                let message = NATSMessage(subject: subject, replySubject: replySubject, data: data, respond: respond)
                state.outbox.append((state.links[subscriber.link]!.deliver, { [weak self] in
                    guard let self, self.state.withLock({ $0.subscribers[subscriptionID] != nil }) else { return }
                    subscriber.handler(message)
                }))
            }
            return id
        }
        if let pending {
            // Started outside the lock; if the request ended meanwhile the timer goes at once.
            let timer = clock.startTimer(every: timeout) { [weak self] in self?.expire(pending) }
            let kept = state.withLock { state -> Bool in
                guard state.requests[pending] != nil else { return false }
                state.requests[pending]?.timer = timer
                return true
            }
            if !kept { timer.cancel() }
        }
        flush()
    }

    /// The first answer completes the request; later ones are published into the void.
    private func answer(_ id: Int, from link: Int, _ data: [UInt8], headers: NATSHeaders?) throws(NATSError) {
        let timer = try state.withLock { state throws(NATSError) -> (any ServerTimer)? in
            guard state.isConnected(link) else { throw .notConnected }
            guard let request = state.requests.removeValue(forKey: id) else { return nil }
            let reply = NATSMessage(subject: request.replySubject, headers: headers ?? NATSHeaders(), data: data)
            state.outbox.append((state.links[request.link]!.deliver, { request.completion(.success(reply)) }))
            return request.timer
        }
        timer?.cancel()
        flush()
    }

    private func expire(_ id: Int) {
        let timer = state.withLock { state -> (any ServerTimer)? in
            guard let request = state.requests.removeValue(forKey: id) else { return nil }
            state.outbox.append((state.links[request.link]!.deliver, { request.completion(.failure(.timeout(subject: request.subject))) }))
            return request.timer
        }
        timer?.cancel()
        flush()
    }

    func isConnected(_ link: Int) -> Bool { state.withLock { $0.isConnected(link) } }

    // MARK: Log

    func append(_ link: Int, _ subject: String, _ data: [UInt8], headers: NATSHeaders, messageID: String,
                            expectedLastSubjectSequence: UInt64?, expectedLastSequence: UInt64? = nil,
                            completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        let now = clock.now
        let destination = republish(subject)  // a caller's closure: never under the lock
        complete(link, completion) { state in
            guard !state.appendsRefused else { return .failure(.timeout(subject: subject)) }
            var log = state.logs[subject] ?? SubjectLog()
            // Duplicates first, as JetStream: a writer retrying its own append learns it is stored.
            // An empty id is no id (the server ignores an empty Nats-Msg-Id).
            if !messageID.isEmpty, let earlier = log.ids[messageID], now < earlier.at + duplicateWindow {
                return .failure(.duplicate(sequence: earlier.sequence))
            }
            let last = log.messages.last?.sequence ?? 0
            if let expectedLastSubjectSequence, last != expectedLastSubjectSequence { return .failure(.wrongLastSequence(current: last)) }
            if let expectedLastSequence, state.sequence != expectedLastSequence { return .failure(.wrongLastSequence(current: state.sequence)) }
            state.sequence += 1
            let sequence = state.sequence
            log.messages.append(StoredMessage(subject: subject, sequence: sequence, headers: headers, data: data))
            if !messageID.isEmpty { log.ids[messageID] = (sequence, now) }
            state.logs[subject] = log
            if let destination {
                // Republished on commit, before the ack (as nats-server does).
                var republished = headers
                republished["Nats-Sequence"] = String(sequence)
                republished["Nats-Last-Sequence"] = String(last)
                fanOut(&state, NATSMessage(subject: destination, headers: republished, data: data), republished: true)
            }
            return .success(sequence)
        }
    }

    func read(_ link: Int, _ subject: String, from sequence: UInt64, handler: @escaping @Sendable (StoredMessage) -> Void,
                          completion: @escaping @Sendable (Result<UInt64?, NATSError>) -> Void) {
        complete(link, completion) { state in
            var last: UInt64?
            // `prefix.>`: every subject under it, in sequence order.
            let messages = subject.hasSuffix(".>")
                ? state.logs.filter { $0.key.hasPrefix(subject.dropLast()) }.flatMap(\.value.messages).sorted { $0.sequence < $1.sequence }
                : state.logs[subject]?.messages ?? []
            for message in messages where message.sequence >= sequence {
                state.outbox.append((state.links[link]!.deliver, { handler(message) }))
                last = message.sequence
            }
            return .success(last)
        }
    }

    var lastSequence: UInt64 { state.withLock { $0.sequence } }

    func delete(_ link: Int, sequence: UInt64, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        complete(link, completion) { state in
            for (subject, log) in state.logs where log.messages.contains(where: { $0.sequence == sequence }) {
                state.logs[subject]?.messages.removeAll { $0.sequence == sequence }
            }
            return .success(())
        }
    }

    // MARK: Key-value

    func openBucket(_ name: String, ttl: Duration?) {
        state.withLock { state in
            if state.buckets[name] == nil { state.buckets[name] = Bucket(ttl: ttl) }
        }
    }

    /// Makes bucket `name`'s writes time out (`refuse`) or be taken again: a stream without a
    /// working leader, as nats-server 2.9.10's owners bucket was for minutes in a soak.
    public func refuseWrites(bucket name: String, _ refuse: Bool) {
        state.withLock { $0.buckets[name]?.refusesWrites = refuse }
    }

    /// A KV call: `notConnected`, `invalidArgument` for a key NATS refuses, or `body`'s result.
    func keyValue<T: Sendable>(_ link: Int, bucket name: String, key: String,
                                           _ completion: @escaping @Sendable (Result<T, NATSError>) -> Void,
                                           _ body: (inout Bucket, ContinuousClock.Instant) -> Result<T, NATSError>) {
        let now = clock.now
        complete(link, completion) { state in
            guard Self.isValidKey(key) else { return .failure(.invalidArgument("invalid KV key \(key)")) }
            return body(&state.buckets[name]!, now)
        }
    }

    func keys(_ link: Int, bucket name: String) throws(NATSError) -> [String] {
        let now = clock.now
        return try state.withLock { state throws(NATSError) in
            guard state.isConnected(link) else { throw .notConnected }
            let bucket = state.buckets[name]!
            return bucket.values.keys.filter { bucket.live($0, now: now) != nil }.sorted()
        }
    }

    /// NATS KV keys are subject tokens: letters, digits and `-/_=.`, not starting or ending with
    /// `.` (what `NATSKeyValue` checks), so a test can't use a key production would refuse.
    private static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && !key.hasPrefix(".") && !key.hasSuffix(".") && key.utf8.allSatisfy { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || "-/_=.".utf8.contains(byte)
        }
    }
}

extension MemoryCluster {
    /// A cluster in memory whose logs republish as tetherd's streams do (log subject → fan subject).
    public convenience init(clock: any ServerClock) {
        self.init(clock: clock, republish: ClusterSubjects.fan(ofLog:))
    }

    /// What room `room`'s log holds, with tetherd's subjects over `streams` log streams.
    /// Makes every log append time out (`refuse`) or be taken again: the log's stream without a
    /// leader, as after its leader's NATS server is killed.
    public func refuseAppends(_ refuse: Bool) {
        state.withLock { $0.appendsRefused = refuse }
    }

    public func log(of room: String, streams: Int) -> [StoredMessage] {
        storedMessages(subject: ClusterSubjects.log(of: room, streams: streams))
    }
}
