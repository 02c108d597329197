import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// The owner's appends to a room's log: the steps its ViewModel produced, queued; one append in
/// flight (consecutive patches merged into one message); where its last stored entry is; and,
/// after a step-down with an append in flight, that append until the log decides it.
///
/// Every append is checked (expected last sequence plus a message id per slot): that is the
/// fence, so two nodes that both believe they own the room never both extend its history. An
/// entry in the log after the owner's last stored one that is not its append in flight means
/// another owner's history continues there: the owner steps down (fenced).
///
/// A value type, events in and actions out; `ClusteredRoom` performs the actions.
struct LogAppender {
    /// A step the owner's ViewModel produced.
    enum Step {
        /// A version step, with its operations on the ViewModel's stored state, the projections it
        /// changed on each node (per-viewer values), the numbered action it applied and its events
        /// for webhook endpoints.
        /// `provenance`: the step's record (`StepProvenance`), encoded, for the room's history.
        case patch(PatchFrame, stored: [PatchOperation], projections: JSON?, applied: ActionNumber?, webhooks: [WebhookDelivery] = [],
                   provenance: [UInt8]? = nil)
        case epochStart(epoch: String, version: Int, frame: [UInt8], stored: JSON)
        /// The state the steps up to `version` made (`frame` a snapshot), for the room's history.
        case checkpoint(epoch: String, version: Int, frame: [UInt8], stored: JSON)

        var version: Int {
            switch self {
            case .patch(let patch, _, _, _, _, _): patch.version
            case .epochStart(_, let version, _, _), .checkpoint(_, let version, _, _): version
            }
        }
    }

    enum Action {
        /// Append `entry`, checked against `expectedLastSequence`.
        case append(LogEntry, expectedLastSequence: UInt64)
        /// Append the same entry again after `delay` (if it is still in flight then).
        case retry(LogEntry, after: Duration)
        /// Something holds the place after the last stored entry: read the log after the replica's
        /// position (each message back through `logHolds`), then `readToDecideFinished`; `since`:
        /// when the first such read started.
        case readToDecide(LogEntry, since: ContinuousClock.Instant, after: Duration)
        /// The steps up to `version` are in the log at `sequence`, `latency` after they were sent.
        case stored(version: Int, sequence: UInt64, latency: Duration)
        case stepDown(reason: String, releaseLease: Bool, fenced: Bool)
        /// The undecided append is in the log at `sequence` (`stored`), or another owner's entry
        /// holds its place.
        case decided(stored: Bool, sequence: UInt64)
    }

    struct InFlight {
        let entry: LogEntry
        /// How many queued steps it carries.
        let count: Int
        let firstTried: ContinuousClock.Instant
        var sent: ContinuousClock.Instant
    }

    /// The append whose fate the owner lost when it stepped down, decided by the entry the log
    /// holds after `after`, or unknown once `deadline` passes.
    struct Undecided {
        let entry: LogEntry
        let after: UInt64
        var deadline: ContinuousClock.Instant
    }

    static let giveUp: Duration = .seconds(10)
    /// One try of an append. Short: a try in flight when the stream's leader changes is lost, and
    /// retries are safe (the same message id and expected sequence; a duplicate is decided by
    /// reading the log). An R3 append takes a few milliseconds.
    static let tryTimeout: Duration = .milliseconds(500)
    static let retryDelay: Duration = .milliseconds(250)
    /// How long an append whose fate its owner lost may take to show up in the log (a retry's
    /// timeout) before its actions are answered as unknown.
    static let undecidedLimit: Duration = .seconds(5)
    static let maxAppendBytes = 256 << 10
    /// The most the steps' provenance (`Tether-Steps`, a header) may hold in one merged append.
    static let maxProvenanceBytes = 16 << 10

    let node: String
    /// The owner's term while it owns the room (`LogEntry.term`); nil otherwise.
    private(set) var term: String?
    private(set) var queue: [Step] = []
    private(set) var inFlight: InFlight?
    /// Where the owner's last stored entry is in the log, and the version it brought.
    private(set) var stored: (sequence: UInt64, version: Int) = (0, 0)
    /// The last version the owner's ViewModel produced: a reply made now waits for it.
    private(set) var producedVersion = 0
    private(set) var undecided: Undecided?
    /// The term that ended last: its ViewModel may still release replies to its steps.
    private(set) var ended: EndedTerm?
    /// The mark for the next entry: the last webhook event this term copied (`PendingWebhooks`).
    var webhooksCopied: String?

    struct EndedTerm {
        let term: String
        /// Its last entry known to be in the log.
        var stored: (sequence: UInt64, version: Int)
        /// The last version of its append in flight when it ended, unless that was refused.
        var lostVersion: Int?
    }

    init(node: String) {
        self.node = node
    }

    /// Starts owning in `term`, continuing the log's entry at `sequence` (version `version`).
    mutating func own(term: String, after sequence: UInt64, version: Int) {
        self.term = term
        stored = (sequence, version)
        producedVersion = version
        webhooksCopied = nil
    }

    /// A step the owner's ViewModel produced in `term`. A term that ended appends nothing.
    mutating func produced(_ step: Step, term: String, now: ContinuousClock.Instant) -> [Action] {
        guard self.term == term else { return [] }
        producedVersion = step.version
        queue.append(step)
        return next(now: now)
    }

    /// The append of `entry` finished.
    mutating func appendFinished(_ result: Result<UInt64, NATSError>, entry: LogEntry, now: ContinuousClock.Instant) -> [Action] {
        guard let current = inFlight, current.entry.isSameAppend(as: entry), term != nil else { return [] }
        switch result {
        case .success(let sequence):
            return confirm(sequence, now: now)
        case .failure(.duplicate), .failure(.duplicateInProcess), .failure(.wrongLastSequence):
            // Our own earlier try, stored (or being stored) after all, or another owner's entry:
            // the log decides.
            return [.readToDecide(entry, since: now, after: .zero)]
        case .failure(let error):
            guard now - current.firstTried < Self.giveUp else {
                return [.stepDown(reason: "its log did not take a version for \(Self.giveUp) (\(error))", releaseLease: true, fenced: false)]
            }
            return [.retry(entry, after: Self.retryDelay)]
        }
    }

    /// Whether `entry` is still the append in flight (a retry's timer fired).
    func isInFlight(_ entry: LogEntry) -> Bool {
        term != nil && inFlight?.entry.isSameAppend(as: entry) == true
    }

    /// A retry's timer fired: the same entry again, if it is still in flight.
    func resend(_ entry: LogEntry) -> [Action] {
        guard isInFlight(entry) else { return [] }
        return [.append(entry, expectedLastSequence: stored.sequence)]
    }

    /// The read started by `.readToDecide` ended without deciding the append (`since`: when it
    /// first tried): read again, or give up and step down.
    mutating func readToDecideFinished(_ entry: LogEntry, since started: ContinuousClock.Instant, now: ContinuousClock.Instant) -> [Action] {
        guard isInFlight(entry) else { return [] }  // decided meanwhile
        guard now - started < Self.giveUp else {
            return [.stepDown(reason: "its log's entry after version \(stored.version) could not be read", releaseLease: true, fenced: false)]
        }
        return [.readToDecide(entry, since: started, after: Self.retryDelay)]
    }

    /// The replica met `entry` at `sequence` in the log: it may decide the undecided append and
    /// the append in flight (ours, stored; or another owner's entry, which fences this one).
    mutating func logHolds(_ entry: LogEntry, at sequence: UInt64, now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        if let undecided, sequence > undecided.after {
            self.undecided = nil
            let stored = entry.isSameAppend(as: undecided.entry)
            if stored { ended?.stored = (sequence, undecided.entry.version) }
            ended?.lostVersion = nil
            actions.append(.decided(stored: stored, sequence: sequence))
        }
        guard term != nil, sequence > stored.sequence else { return actions }
        if let inFlight, entry.isSameAppend(as: inFlight.entry) {
            return actions + confirm(sequence, now: now)  // its acknowledgement may still be on its way, or lost
        }
        return actions + [.stepDown(reason: "another node appended to its log (fenced)", releaseLease: false, fenced: true)]
    }

    /// Stops owning: the queued steps are dropped (their actions were not applied). The append in
    /// flight was refused when `fenced`; else it becomes undecided. Returns its last version.
    mutating func stepDown(fenced: Bool, now: ContinuousClock.Instant) -> Int? {
        let inFlightVersion = inFlight?.entry.version
        if let inFlight, !fenced {
            undecided = Undecided(entry: inFlight.entry, after: stored.sequence, deadline: now + Self.undecidedLimit)
        }
        if let term { ended = EndedTerm(term: term, stored: stored, lostVersion: fenced ? nil : inFlightVersion) }
        self.term = nil
        queue.removeAll()
        inFlight = nil
        return inFlightVersion
    }

    /// What became of step `version` of `term`, which ended.
    func fate(ofVersion version: Int, term: String) -> StepFate {
        guard let ended, ended.term == term else { return .unknown }
        if version <= ended.stored.version { return .stored(sequence: ended.stored.sequence) }
        if let lost = ended.lostVersion, version <= lost { return undecided == nil ? .unknown : .undecided }
        return .notStored
    }

    /// Whether the undecided append should be given up now: its deadline passed, or `force`
    /// (the room is stopping, or the entry that would decide it is behind a snapshot).
    mutating func expireUndecided(now: ContinuousClock.Instant, force: Bool = false) -> Bool {
        guard let undecided, force || now >= undecided.deadline else { return false }
        self.undecided = nil
        return true
    }

    // MARK: Appending

    private mutating func confirm(_ sequence: UInt64, now: ContinuousClock.Instant) -> [Action] {
        guard let current = inFlight else { return [] }
        stored = (sequence, current.entry.version)
        queue.removeFirst(current.count)
        inFlight = nil
        return [.stored(version: current.entry.version, sequence: sequence, latency: now - current.sent)] + next(now: now)
    }

    /// The next append: one epoch start, or consecutive patches merged into one message.
    private mutating func next(now: ContinuousClock.Instant) -> [Action] {
        guard inFlight == nil, !queue.isEmpty, let term else { return [] }
        var (entry, count) = Self.batch(queue, node: node, term: term)
        entry.webhooksCopied = webhooksCopied
        inFlight = InFlight(entry: entry, count: count, firstTried: now, sent: now)
        return [.append(entry, expectedLastSequence: stored.sequence)]
    }

    static func batch(_ queue: [Step], node: String, term: String) -> (LogEntry, count: Int) {
        switch queue[0] {
        case .epochStart(let epoch, let version, let frame, let stored):
            return (LogEntry(kind: .snapshot, epoch: epoch, from: version, version: version, node: node, term: term, frame: frame,
                             stored: stored), 1)
        case .checkpoint(let epoch, let version, let frame, let stored):
            return (LogEntry(kind: .checkpoint, epoch: epoch, from: version, version: version, node: node, term: term, frame: frame,
                             stored: stored), 1)
        case .patch(let first, let firstStored, let firstProjections, let firstApplied, let firstWebhooks, let firstProvenance):
            var last = first
            var bytes = first.operations.count
            var provenanceBytes = firstProvenance?.count ?? 0
            var count = 1
            while count < queue.count, case .patch(let next, _, _, _, _, let provenance) = queue[count], next.epoch == first.epoch,
                  next.from == last.version, bytes + next.operations.count <= maxAppendBytes,
                  provenanceBytes + (provenance?.count ?? 0) <= maxProvenanceBytes {
                last = next
                bytes += next.operations.count
                provenanceBytes += provenance?.count ?? 0
                count += 1
            }
            guard count > 1 else {
                return (LogEntry(kind: .patch, epoch: first.epoch, from: first.from, version: first.version, node: node, term: term,
                                 frame: first.frame, projections: firstProjections, stored: storedOperations(firstStored),
                                 actions: firstApplied.map { [($0, first.version)] } ?? [], webhooks: firstWebhooks,
                                 steps: steps([firstProvenance])), 1)
            }
            var stored: [PatchOperation] = []
            var projections: JSON?
            var actions: [AppliedAction] = []
            var patches: [PatchFrame] = []
            var webhooks: [WebhookDelivery] = []
            var records: [[UInt8]?] = []
            for case .patch(let patch, let storedOperations, let changed, let applied, let events, let provenance) in queue[0..<count] {
                patches.append(patch)
                webhooks += events
                records.append(provenance)
                stored += storedOperations  // each step's operations apply after the last's
                if let changed { projections = merge(projections, changed) }
                if let applied { actions.append((applied, patch.version)) }
            }
            var frame = first.frame
            PatchFrame.writeMerged(patches, from: first.from, to: last.version, into: &frame)
            return (LogEntry(kind: .patch, epoch: first.epoch, from: first.from, version: last.version, node: node, term: term,
                             frame: frame, projections: projections, stored: storedOperations(stored), actions: actions,
                             webhooks: webhooks, steps: steps(records)), count)
        }
    }

    /// The steps' records as one JSON array (nil when none has one).
    private static func steps(_ records: [[UInt8]?]) -> [UInt8]? {
        let present = records.compactMap { $0 }
        guard !present.isEmpty else { return nil }
        var array: [UInt8] = [UInt8(ascii: "[")]
        for (index, record) in present.enumerated() {
            if index > 0 { array.append(UInt8(ascii: ",")) }
            array += record
        }
        array.append(UInt8(ascii: "]"))
        return array
    }

    /// A message's stored operations, or none. (Not `isEmpty ? nil : …`: JSON takes `nil` as a
    /// literal, so that ternary gives `.null`, which every replica then failed to apply.)
    static func storedOperations(_ operations: [PatchOperation]) -> JSON? {
        operations.isEmpty ? JSON?.none : JSONPatch.encode(operations)
    }

    /// Projections of consecutive steps in one message: per node and viewer, the later one.
    private static func merge(_ earlier: JSON?, _ later: JSON) -> JSON {
        guard var nodes = earlier?.objectValue, let laterNodes = later.objectValue else { return later }
        for (node, viewers) in laterNodes {
            nodes[node] = .object((nodes[node]?.objectValue ?? [:]).merging(viewers.objectValue ?? [:]) { _, new in new })
        }
        return .object(nodes)
    }
}
