import TetherState

/// Where this node's replica of a room is: the last log message it applied and the version that
/// brought it to.
struct ReplicaPosition: Equatable, Sendable {
    var sequence: UInt64
    var version: Int
    var hasEpoch: Bool
}

/// What became of an owner's step after its term ended.
enum StepFate: Equatable {
    /// In the log, at or before `sequence`.
    case stored(sequence: UInt64)
    /// In the append whose fate the owner lost: the log decides it.
    case undecided
    /// In that append, which the log did not decide in time; or of a term this node no longer knows.
    case unknown
    /// Queued, or refused by another owner's entry: never in the log.
    case notStored
}

/// The one rule by which a cluster room's action replies leave: **a reply leaves when the log
/// entry that carries its action is stored and this node's replica has applied it** (patch
/// before ack). An error that applied nothing waits for no entry. Replies to another node
/// (forwarded actions) leave once stored: that node's own gate waits for its replica.
///
/// A value type, events in and replies out, no I/O (the shape of swift-nio's state machines):
/// `ClusteredRoom` feeds it and sends what it releases. Replies leave in the order they became due.
struct ReplyGate<Target> {
    enum Wait: Equatable {
        /// The owner's reply to an action of its version step `version`: its own append of that
        /// step must be stored first (learned from the append's ack or from the log).
        case ownAppend(version: Int)
        /// Its entry is stored at `sequence`: this node's replica must apply it.
        case replica(sequence: UInt64)
        /// A forwarded action's ack from the owner: this node's replica must reach `version`.
        case replicaVersion(Int)
        /// In the append whose fate the owner lost when it stepped down: the log decides it.
        case undecided
    }

    struct Reply {
        var outcome: ActionOutcome
        let target: Target
        /// Whether a session of this node gets it (else another node, whose gate waits for its replica).
        let isLocal: Bool
        var wait: Wait
        /// When it is due: still waiting then, it leaves as unknown (`overdue`).
        var deadline: ContinuousClock.Instant
    }

    /// A reply that leaves now.
    struct Release {
        let outcome: ActionOutcome
        let target: Target
    }

    private(set) var waiting: [Reply] = []

    /// A reply the owner's ViewModel made after its step `version` (an error: after every step
    /// produced before it), while it owns the room; `stored`: where its last stored entry is.
    mutating func ownerReplied(_ outcome: ActionOutcome, to target: Target, isLocal: Bool, version: Int,
                               stored: (version: Int, sequence: UInt64), replica: ReplicaPosition,
                               deadline: ContinuousClock.Instant) -> [Release] {
        let wait: Wait = version <= stored.version ? .replica(sequence: stored.sequence) : .ownAppend(version: version)
        return admit(Reply(outcome: outcome, target: target, isLocal: isLocal, wait: wait, deadline: deadline), replica: replica)
    }

    /// A reply the owner's ViewModel released after its term ended (its steps and its replies
    /// reach the room one after the other, and the step-down can come between): an ack follows
    /// the fate of the step it names (a repeat's may be stored long since); an error is true
    /// whatever the log holds.
    mutating func ownerRepliedLate(_ outcome: ActionOutcome, to target: Target, isLocal: Bool, fate: StepFate,
                                   notStored: ActionOutcome, unknown: ActionOutcome, replica: ReplicaPosition,
                                   deadline: ContinuousClock.Instant) -> [Release] {
        guard case .applied = outcome else { return [Release(outcome: outcome, target: target)] }
        switch fate {
        case .stored(let sequence):
            return admit(Reply(outcome: outcome, target: target, isLocal: isLocal, wait: .replica(sequence: sequence), deadline: deadline),
                         replica: replica)
        case .undecided:
            waiting.append(Reply(outcome: outcome, target: target, isLocal: isLocal, wait: .undecided, deadline: deadline))
            return []
        case .unknown: return [Release(outcome: unknown, target: target)]
        case .notStored: return [Release(outcome: notStored, target: target)]
        }
    }

    /// The owner's answer to an action this node forwarded: an ack waits for the replica to reach
    /// its version; an error leaves once the replica has an epoch.
    mutating func ownerAnswered(_ outcome: ActionOutcome, to target: Target, replica: ReplicaPosition,
                                deadline: ContinuousClock.Instant) -> [Release] {
        var version = 0
        if case .applied(let applied) = outcome { version = applied }
        return admit(Reply(outcome: outcome, target: target, isLocal: true, wait: .replicaVersion(version), deadline: deadline),
                     replica: replica)
    }

    /// The owner's append of the steps up to `version` is in the log at `sequence`.
    mutating func stored(upTo version: Int, at sequence: UInt64, replica: ReplicaPosition) -> [Release] {
        for index in waiting.indices {
            if case .ownAppend(let waited) = waiting[index].wait, waited <= version { waiting[index].wait = .replica(sequence: sequence) }
        }
        return release(replica)
    }

    /// This node's replica applied another log message.
    mutating func replicaMoved(_ replica: ReplicaPosition) -> [Release] {
        release(replica)
    }

    /// The owner stepped down. Its replies waiting for their append: an error leaves as it is
    /// (true whatever the log holds); an ack in the append in flight (`inFlightVersion`, unless
    /// `fenced`: another owner's entry holds its place) waits for the log to decide it; any
    /// other ack becomes `notStored` (its step never reached the log).
    mutating func ownerSteppedDown(inFlightVersion: Int?, fenced: Bool, notStored: ActionOutcome) -> [Release] {
        var released: [Release] = []
        for index in waiting.indices {
            guard case .ownAppend(let version) = waiting[index].wait else { continue }
            guard case .applied = waiting[index].outcome else {
                released.append(Release(outcome: waiting[index].outcome, target: waiting[index].target))
                continue
            }
            if !fenced, let inFlightVersion, version <= inFlightVersion {
                waiting[index].wait = .undecided
            } else {
                released.append(Release(outcome: notStored, target: waiting[index].target))
            }
        }
        waiting.removeAll { if case .ownAppend = $0.wait { true } else { false } }
        return released
    }

    /// The log decided the undecided append: `stored` at `sequence`, or another owner's entry
    /// holds its place.
    mutating func decided(stored: Bool, at sequence: UInt64, notStored: ActionOutcome, replica: ReplicaPosition) -> [Release] {
        guard stored else { return resolveUndecided(as: notStored) }
        for index in waiting.indices where waiting[index].wait == .undecided { waiting[index].wait = .replica(sequence: sequence) }
        return release(replica)
    }

    /// The undecided append did not show up in the log in time: its replies say so (`unknown`).
    mutating func undecidedExpired(_ unknown: ActionOutcome) -> [Release] {
        resolveUndecided(as: unknown)
    }

    var hasUndecided: Bool { waiting.contains { $0.wait == .undecided } }

    /// When the first waiting reply is due.
    var nextDeadline: ContinuousClock.Instant? { waiting.map(\.deadline).min() }

    /// Bounded answers: a reply still waiting at its deadline (its append stuck, this node's
    /// replica cut off from the log) leaves now as `unknown`. The action may have been applied:
    /// its sender asks again under the same number and gets the outcome once the room knows it.
    mutating func overdue(now: ContinuousClock.Instant, unknown: ActionOutcome) -> [Release] {
        guard waiting.contains(where: { now >= $0.deadline }) else { return [] }
        let released = waiting.filter { now >= $0.deadline }.map { Release(outcome: unknown, target: $0.target) }
        waiting.removeAll { now >= $0.deadline }
        return released
    }

    private mutating func resolveUndecided(as outcome: ActionOutcome) -> [Release] {
        let released = waiting.filter { $0.wait == .undecided }.map { Release(outcome: outcome, target: $0.target) }
        waiting.removeAll { $0.wait == .undecided }
        return released
    }

    private mutating func admit(_ reply: Reply, replica: ReplicaPosition) -> [Release] {
        if Self.isDue(reply, replica) { return [Release(outcome: reply.outcome, target: reply.target)] }
        waiting.append(reply)
        return []
    }

    private mutating func release(_ replica: ReplicaPosition) -> [Release] {
        guard waiting.contains(where: { Self.isDue($0, replica) }) else { return [] }
        let released = waiting.filter { Self.isDue($0, replica) }.map { Release(outcome: $0.outcome, target: $0.target) }
        waiting.removeAll { Self.isDue($0, replica) }
        return released
    }

    private static func isDue(_ reply: Reply, _ replica: ReplicaPosition) -> Bool {
        switch reply.wait {
        case .ownAppend, .undecided: false
        case .replica(let sequence): !reply.isLocal || sequence <= replica.sequence
        case .replicaVersion(let version): replica.hasEpoch && version <= replica.version
        }
    }
}
