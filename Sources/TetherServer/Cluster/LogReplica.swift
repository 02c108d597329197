import TetherNATS

/// How a node follows a room's log: load the latest snapshot, read the log after it to its
/// end, then apply the republished messages as they arrive, checked for gaps by stream sequence
/// (`Nats-Last-Sequence` must be the last one applied). Messages that arrive while the log is
/// read wait and are replayed after; a gap reads the log again from the last applied message.
///
/// A value type, events in and actions out; `ClusteredRoom` performs them (one `readLog(from:)`
/// serves every read) and applies each message to the room's state.
struct LogReplica {
    enum Phase: Equatable { case loading, ready, stopped }

    enum Action {
        case loadSnapshot(after: Duration)
        /// Read the log after the last applied message to its end (`caughtUp` after).
        case catchUp(after: Duration)
        /// Apply `message` (the wiring calls `applied` once it did).
        case apply(NATSMessage, sequence: UInt64)
        /// Feed these messages, which arrived during the read, through `live` again.
        case replay([NATSMessage])
        case becameReady
        /// Call `verify` after this delay.
        case verify(after: Duration)
    }

    private(set) var phase = Phase.loading
    /// Stream sequence of the last log message applied.
    private(set) var lastSequence: UInt64 = 0
    private(set) var isCatchingUp = false
    /// Live messages that arrived while the log was being read.
    private var buffered: [NATSMessage] = []
    /// How many times the replica started over (`reload`): a read started before the latest
    /// one is stale, and neither its messages nor its end may touch the replica any more.
    private(set) var generation = 0
    /// When the replica last started over; a log that disagrees again within a second (its
    /// snapshot is older than what the log still holds) is read again after `retryDelay`.
    private var lastReload: ContinuousClock.Instant?

    static let retryDelay: Duration = .milliseconds(500)
    /// How long after first becoming ready the log is read once more. A new subscription's
    /// interest reaches the other NATS servers a moment after the subscribing one took it: a
    /// message the log republished in that moment (say, a new room's first entry) never came,
    /// and no later message shows the gap in a room that stays quiet.
    static let verifyDelay: Duration = .seconds(1)
    private var verified = false

    mutating func start() -> [Action] {
        isCatchingUp = true
        return [.loadSnapshot(after: .zero)]
    }

    mutating func snapshotFailed() -> [Action] {
        [.loadSnapshot(after: Self.retryDelay)]
    }

    /// The snapshot (if any) is applied: read the log after `sequence` (0: from its start).
    mutating func restored(at sequence: UInt64?) -> [Action] {
        if let sequence { lastSequence = sequence }
        return catchUp()
    }

    mutating func catchUp() -> [Action] {
        isCatchingUp = true
        return [.catchUp(after: .zero)]
    }

    /// A read started at `generation` ended (a stale one changes nothing).
    mutating func caughtUp(_ result: Result<UInt64?, NATSError>, generation: Int) -> [Action] {
        guard phase != .stopped, generation == self.generation else { return [] }
        if case .failure = result { return [.catchUp(after: Self.retryDelay)] }
        isCatchingUp = false
        let replay = buffered
        buffered.removeAll()
        return replay.isEmpty ? finishLoading() : [.replay(replay)]
    }

    /// After a `.replay`: ready, unless a gap started another read.
    mutating func finishLoading() -> [Action] {
        guard !isCatchingUp, phase == .loading else { return [] }
        phase = .ready
        guard !verified else { return [.becameReady] }
        verified = true
        return [.becameReady, .verify(after: Self.verifyDelay)]
    }

    /// The read `verifyDelay` after becoming ready: catches up unless a read is under way.
    mutating func verify() -> [Action] {
        phase == .ready && !isCatchingUp ? catchUp() : []
    }

    /// A message republished by the log.
    mutating func live(_ message: NATSMessage) -> [Action] {
        guard phase != .stopped else { return [] }
        if isCatchingUp {
            buffered.append(message)
            return []
        }
        guard let sequence = message.headers["Nats-Sequence"].flatMap({ UInt64($0) }), sequence > lastSequence else { return [] }
        let previous = message.headers["Nats-Last-Sequence"].flatMap { UInt64($0) } ?? 0
        guard previous == lastSequence else {
            buffered.append(message)  // a gap: read what was missed first
            return catchUp()
        }
        return [.apply(message, sequence: sequence)]
    }

    /// Whether the message at `sequence` is new here.
    func isNew(_ sequence: UInt64) -> Bool { sequence > lastSequence }

    mutating func applied(_ sequence: UInt64) {
        lastSequence = max(lastSequence, sequence)
    }

    /// The log disagreed with what this replica holds: start over from the latest snapshot, at
    /// once the first time, after `retryDelay` when it disagreed again within a second (the
    /// snapshot is older than the oldest entry the log keeps, until the owner writes a newer one).
    mutating func reload(now: ContinuousClock.Instant) -> [Action] {
        let again = lastReload.map { now - $0 < .seconds(1) } ?? false
        lastReload = now
        generation += 1
        lastSequence = 0
        isCatchingUp = true
        buffered.removeAll()
        // Loading again: nobody takes the room over from a replica that holds nothing yet (it
        // would start a new epoch, which the log refuses), until it is ready once more.
        if phase != .stopped { phase = .loading }
        return [.loadSnapshot(after: again ? Self.retryDelay : .zero)]
    }

    mutating func stop() {
        phase = .stopped
        buffered.removeAll()
    }
}
