import TetherNATS

/// A node's claim to own a room: a key in the owners bucket whose value is the node's name,
/// expiring a lease after its last write. Acquire (create the key, or take back our own from
/// before a restart), read the log to its end, own, renew every third of a lease, step down.
///
/// The lease only keeps owners from fighting; safety rests on the log's checked appends
/// (`LogAppender`). A value type, events in and actions out; `ClusteredRoom` performs them.
struct OwnerLease: Equatable {
    enum Phase: Equatable {
        case free
        /// Reading the key: is the room owned at all?
        case probing
        /// Creating the key.
        case creating
        /// The key exists: is it ours from before a restart under the same node name?
        case reclaiming
        /// The key is ours: reading the log to its end before running the ViewModel.
        case catchingUp(revision: UInt64, since: ContinuousClock.Instant)
        case owning(revision: UInt64)
        /// Owning, but a renewal found the key elsewhere than we left it: who holds it now?
        /// (With its bucket leaderless for a while, the key may just have expired.)
        case checking(revision: UInt64)
    }

    enum Action: Equatable {
        case probe
        case create
        case readHolder
        /// Read the log after the replica's position, then `logRead`.
        case readLog
        case readLogAgain(after: Duration)
        /// Run the ViewModel and take forwarded actions (`ownFailed` if that cannot be done).
        case own(revision: UInt64)
        case renew(revision: UInt64)
        case release
        case stepDown(reason: String)
        /// Tell whoever waits for an owner whether this node is one now.
        case acquired(Bool)
        case renewalFailed(String)
        /// Owning, read the key (`holderChecked`); create it again (`recreated`).
        case checkHolder
        case recreate
    }

    let node: String
    let lease: Duration
    private(set) var phase = Phase.free

    init(node: String, lease: Duration) {
        self.node = node
        self.lease = lease
    }

    var isOwning: Bool {
        switch phase {
        case .owning, .checking: true
        default: false
        }
    }

    /// Somebody should own the room: ask whether anybody does.
    mutating func ensure() -> [Action] {
        guard phase == .free else { return [] }
        phase = .probing
        return [.probe]
    }

    mutating func probed(_ result: Result<NATSKeyValue.Entry?, NATSError>) -> [Action] {
        guard phase == .probing else { return [] }
        guard case .success(nil) = result else {
            phase = .free
            return []
        }
        phase = .creating
        return [.create]
    }

    /// This node wants to own the room (an action has nowhere else to go).
    mutating func acquire() -> [Action] {
        switch phase {
        case .owning, .checking: return [.acquired(true)]
        case .free, .probing:
            phase = .creating
            return [.create]
        case .creating, .reclaiming, .catchingUp: return []
        }
    }

    mutating func created(_ result: Result<UInt64, NATSError>, now: ContinuousClock.Instant) -> [Action] {
        guard phase == .creating else { return [] }
        switch result {
        case .success(let revision):
            phase = .catchingUp(revision: revision, since: now)
            return [.readLog]
        case .failure(.keyExists):
            phase = .reclaiming
            return [.readHolder]
        case .failure:
            phase = .free
            return [.acquired(false)]
        }
    }

    mutating func holderRead(_ result: Result<NATSKeyValue.Entry?, NATSError>, now: ContinuousClock.Instant) -> [Action] {
        guard phase == .reclaiming else { return [] }
        if case .success(let entry?) = result, entry.value == Array(node.utf8) {
            phase = .catchingUp(revision: entry.revision, since: now)
            return [.readLog]
        }
        phase = .free
        return [.acquired(false)]
    }

    /// The read before owning ended: own, or read again (its stream electing a leader) for up to
    /// a lease, then give the lease back.
    mutating func logRead(_ result: Result<UInt64?, NATSError>, now: ContinuousClock.Instant) -> [Action] {
        guard case .catchingUp(let revision, let since) = phase else { return [] }
        if case .failure = result {
            guard now - since < lease else {
                phase = .free
                return [.release, .acquired(false)]
            }
            return [.readLogAgain(after: .milliseconds(100))]
        }
        phase = .owning(revision: revision)
        return [.own(revision: revision), .acquired(true)]
    }

    /// `.own` could not be carried out.
    mutating func ownFailed() -> [Action] {
        phase = .free
        return [.release, .acquired(false)]
    }

    /// The room stopped on this node while acquiring.
    mutating func abandon() -> [Action] {
        guard !isOwning, phase != .free else { return [] }
        phase = .free
        return [.acquired(false)]
    }

    mutating func renewDue() -> [Action] {
        guard case .owning(let revision) = phase else { return [] }  // not while checking
        return [.renew(revision: revision)]
    }

    mutating func renewed(_ result: Result<UInt64, NATSError>) -> [Action] {
        guard case .owning(let revision) = phase else { return [] }
        switch result {
        case .success(let revision):
            phase = .owning(revision: revision)
            return []
        case .failure(.wrongRevision), .failure(.keyExists):
            // Taken by another node, or expired while its bucket elected a leader: ask.
            phase = .checking(revision: revision)
            return [.checkHolder]
        case .failure(let error):
            return [.renewalFailed(error.description)]  // the log still fences
        }
    }

    /// What the key holds after a refused renewal: our own write (keep owning at its revision),
    /// nothing (it expired: create it again), or another node's name (step down).
    mutating func holderChecked(_ result: Result<NATSKeyValue.Entry?, NATSError>) -> [Action] {
        guard case .checking(let revision) = phase else { return [] }
        switch result {
        case .success(let entry?) where entry.value == Array(node.utf8):
            phase = .owning(revision: entry.revision)
            return []
        case .success(nil):
            return [.recreate]
        case .success:
            return [.stepDown(reason: "another node holds its lease now")]
        case .failure(let error):
            phase = .owning(revision: revision)  // the next renewal asks again
            return [.renewalFailed(error.description)]
        }
    }

    mutating func recreated(_ result: Result<UInt64, NATSError>) -> [Action] {
        guard case .checking(let revision) = phase else { return [] }
        switch result {
        case .success(let revision):
            phase = .owning(revision: revision)
            return []
        case .failure(.keyExists):
            return [.checkHolder]
        case .failure(let error):
            phase = .owning(revision: revision)
            return [.renewalFailed(error.description)]
        }
    }

    /// Stops owning (or acquiring); `release` deletes the key so another node need not wait.
    mutating func stepDown(release: Bool) -> [Action] {
        phase = .free
        return release ? [.release] : []
    }
}
