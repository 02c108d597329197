import Dispatch
import Logging
import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// A shared room on one node of a cluster: the wiring that feeds the room's state machines and
/// carries out what they decide.
///
/// Every node with interest in the room keeps a *replica* (`LogReplica`, and the document it
/// builds here: ClusteredRoom+Log.swift): the room's latest snapshot, then its log, kept
/// current by the log's republished messages. The replica serves this node's joins and fans
/// each version out to this node's subscribers, sharing the frame bytes the owner encoded.
///
/// One node at a time *owns* the room (`OwnerLease`): it runs the ViewModel (a local `Room`)
/// and appends each version step to the log with a checked append (`LogAppender`), which is
/// the fence. Actions arriving on another node are forwarded to the owner (`ActionForwarder`).
/// Every reply leaves by one rule (`ReplyGate`): once the entry carrying its action is stored
/// and this node's replica has applied it. ClusteredRoom+Owner.swift wires ownership.
///
/// An actor on its room executor: NATS callbacks, timers and the owner's `Room` hand their work
/// to `execute`, and the compiler keeps every state machine on that one queue.
actor ClusteredRoom: RoomFront {
    nonisolated let name: String
    nonisolated let kind: ViewModelKind
    nonisolated let node: ClusterNode
    nonisolated let environment: RoomEnvironment
    nonisolated var webhookRecorder: WebhookRecorder? { environment.webhooks }
    nonisolated let output: any RoomOutput
    private nonisolated let executor: any RoomExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    var logger: Logger { environment.logger }
    var now: ContinuousClock.Instant { environment.runtime.clock.now }

    // The replica.
    var replica = LogReplica()
    /// This node's subscribers and what they have seen of the log: epoch (none until the log
    /// has one), version, history, snapshot cache, viewers' views (Rooms/RoomFollowers.swift).
    var followers: RoomFollowers
    var version: Int { followers.version }
    var document: JSON = .null
    /// The ViewModel's stored state at `version`, which clients never see; nil when the log
    /// holds none (entries of a version of tetherd without stored state).
    var storedDocument: JSON?
    var lastSnapshotVersion = 0
    /// After a snapshot that was not written, versions until the next try.
    static let snapshotRetryVersions = 10
    /// Whether the last snapshot write failed: an outage is logged once, and its end.
    var snapshotsFailing = false
    /// The wall-clock second the room list's size was last measured (`publishListing`).
    var sizeMeasuredAt = 0
    /// The numbered actions' outcomes the log's entries carry, as the owner's `Room` remembers
    /// them: a new owner starts from these, so a repeat after a failover is answered too.
    var outcomes = ActionOutcomes()
    /// Webhook events of the log not yet known to be in the webhook stream; the owner copies them.
    var webhooks = PendingWebhooks()
    var waitingJoins: [(SessionHandle, ResumePoint?, Int?, PresenceJoin?)] = []
    private var subscriptions: [any ClusterSubscription] = []
    private var timers: [any ServerTimer] = []
    /// Who is here, on every node (Presence/ClusterPresence.swift); nil for kinds without presence.
    let presence: ClusterPresence?
    /// This node's viewers announced to the owner, and every node's (for when this node owns).
    var viewers: ClusterViewers?

    // Actions and replies.
    var forwarder: ActionForwarder<ActionReplyTarget>
    /// Actions sent before the replica was ready.
    var waitingActions: [ActionForwarder<ActionReplyTarget>.Request] = []
    /// Actions that found no owner, while this node tries to take the room (`waitForOwner`).
    var actionsWithoutOwner: [ActionForwarder<ActionReplyTarget>.Request] = []
    var gate = ReplyGate<ActionReplyTarget>()

    // Ownership (ClusteredRoom+Owner.swift).
    var lease: OwnerLease
    var appender: LogAppender
    struct Ownership {
        let room: Room
        /// Names this time of owning the room in every entry it appends (LogEntry.term).
        let term: String
        let actions: [any ClusterSubscription]
        let renewal: any ServerTimer
    }
    var ownership: Ownership?
    /// The node that owns the room as far as this node knows (its announcement, or the lease's
    /// value): forwards go to it by name.
    var knownOwner: String?
    var afterAcquiring: [(Bool) -> Void] = []
    /// Since when this node's tries to take the room over failed, and why the last did: a room
    /// that stays without an owner is logged once (its lease bucket or log not answering).
    var failedAcquiring: (since: ContinuousClock.Instant, why: String, logged: Bool)?
    /// Set while a check of overdue answers is due (`checkAnswers`), and when.
    var answerCheck: (timer: any ServerTimer, at: ContinuousClock.Instant)?

    nonisolated let stopped = DispatchGroup()
    /// The followers' epoch and version cell, kept here too: the hub reads it from its own thread.
    nonisolated let published: RoomVersionCell

    init(name: String, kind: ViewModelKind, node: ClusterNode, environment: RoomEnvironment, output: any RoomOutput) {
        self.name = name
        self.kind = kind
        self.node = node
        self.environment = environment
        self.output = output
        let presence = kind.hasPresence ? ClusterPresence(room: name, node: node, maxMembers: environment.configuration.maxPresenceMembers,
                                                          window: environment.configuration.presenceWindow, clock: environment.runtime.clock) : nil
        self.presence = presence
        followers = RoomFollowers(room: name, epoch: "", perViewer: kind.instantiate(room: name).hasPerViewerValues, presence: presence,
                                  configuration: environment.configuration, metrics: node.metrics)
        published = followers.published
        executor = environment.runtime.makeRoomExecutor(name)
        forwarder = ActionForwarder(room: name, lease: node.lease)
        lease = OwnerLease(node: node.name, lease: node.lease)
        appender = LogAppender(node: node.name)
        stopped.enter()
    }

    /// Runs `work` on the room's executor after everything given to it before.
    nonisolated func execute(_ work: @escaping @Sendable (isolated ClusteredRoom) -> Void) {
        executor.execute { self.assumeIsolated(work) }
    }

    /// Runs `work` after `delay` (at once for none).
    func later(_ delay: Duration, _ work: @escaping @Sendable (isolated ClusteredRoom) -> Void) {
        guard delay > .zero else { return work(self) }
        let timer = TimerBox()
        timer.timer = environment.runtime.clock.startTimer(every: delay) { [self] in
            timer.timer?.cancel()
            execute(work)
        }
    }

    // MARK: Endpoint (any thread)

    nonisolated func start(after predecessor: (any RoomEndpoint)?) {
        execute { $0.begin(after: predecessor) }
    }

    nonisolated func join(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence join: PresenceJoin?) {
        execute { $0.admit(session, since: since, id: id, presence: join) }
    }

    nonisolated func leave(_ session: SessionHandle) {
        execute { room in
            room.waitingJoins.removeAll { $0.0 == session }
            room.frontLeave(session)
        }
    }

    nonisolated func perform(_ action: String, args: JSON?, id: Int, number: ActionNumber?, from session: SessionHandle) {
        let received = environment.runtime.clock.now
        let request = ActionForwarder<ActionReplyTarget>.Request(action: action, args: args, number: number,
                                                                 target: .session(session, id: id, room: name, received: received),
                                                                 sent: received)
        execute { $0.act(request) }
    }

    nonisolated func stop() {
        execute { $0.finish() }
    }

    nonisolated func waitUntilStopped() { stopped.wait() }

    nonisolated func stopAndWait() async {
        stop()
        await withCheckedContinuation { continuation in
            stopped.notify(queue: .global()) { continuation.resume() }
        }
    }

    // MARK: Lifecycle

    private func begin(after predecessor: (any RoomEndpoint)?) {
        predecessor?.waitUntilStopped()
        subscribeToLog()
        startPresence()
        startViewers()
        perform(replica.start())
        // A quarter lease: a dead or paused owner's room has a new owner within 1.25 leases.
        timers.append(environment.runtime.clock.startTimer(every: node.lease / 4) { [self] in execute { $0.checkOwner() } })
    }

    private func subscribeToLog() {
        do {
            subscriptions.append(try node.messaging.subscribe(node.fanSubject(name)) { [self] message in
                execute { $0.perform($0.replica.live(message)) }
            })
            subscriptions.append(try node.messaging.subscribe(node.ownerSubject(name)) { [self] message in
                execute { $0.ownerChanged(to: String(decoding: message.data, as: UTF8.self)) }
            })
        } catch {
            logger.error("cluster: room \(name): cannot follow its log: \(error)")
        }
    }

    private func finish() {
        guard replica.phase != .stopped else { return }
        stepDown("the room left this node's memory", releaseLease: true, fenced: false)
        replica.stop()
        giveUpUndecided()
        for subscription in subscriptions { subscription.unsubscribe() }
        subscriptions.removeAll()
        for timer in timers { timer.cancel() }
        timers.removeAll()
        answerCheck?.timer.cancel()
        presence?.stop()
        viewers?.stop()
        let failure = ActionOutcome.failed(Self.notApplied("room \(name) is closing on this node"))
        send((waitingActions + actionsWithoutOwner).map { .init(outcome: failure, target: $0.target) })
        waitingActions.removeAll()
        actionsWithoutOwner.removeAll()
        stopped.leave()
    }

    // MARK: Subscribers

    private func admit(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence join: PresenceJoin?) {
        guard replica.phase == .ready, followers.hasEpoch else {
            waitingJoins.append((session, since, id, join))
            if replica.phase == .ready { ensureOwner() }
            return
        }
        subscribe(session, since: since, id: id, presence: join)
    }

    func serveWaiting() {
        guard replica.phase == .ready, followers.hasEpoch else { return }
        let joins = waitingJoins
        waitingJoins.removeAll()
        for (session, since, id, join) in joins { subscribe(session, since: since, id: id, presence: join) }
    }

    private func subscribe(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence join: PresenceJoin?) {
        guard followers.hasEpoch else { return }
        frontJoin(session, since: since, id: id, presence: join)
    }

    // MARK: The room front (Rooms/RoomFront.swift)

    var isServing: Bool { replica.phase != .stopped }
    func frontDocument() -> JSON { document }
    /// A viewer new to this node sees the shared document alone until the owner's next step
    /// brings theirs.
    func frontProjection(for viewer: Viewer) -> [String: JSON] { [:] }
    /// The owner's ViewModel hears of members from `presence` (`onMemberChange`), not from here.
    func membersChanged(_ outcome: RoomFollowers.PresenceOutcome) -> [RoomDelivery] { [] }
    func emit(_ deliveries: [RoomDelivery]) { output.deliver(deliveries) }

    /// Announces a viewer new to this node, and one it no longer has, to the owner.
    func viewersChanged(came: Viewer?, left: Viewer?) {
        if let came { viewers?.add(AnnouncedViewer(viewer: came, holds: false)) }
        if let left { viewers?.remove(left) }
    }

    // MARK: Presence and per-viewer values

    private func startPresence() {
        guard let presence else { return }
        presence.start { [self] message in
            execute { if $0.presence?.receive(message, now: $0.now) == true { $0.presenceChangedElsewhere() } }
        }
        timers.append(environment.runtime.clock.startTimer(every: NodeAnnouncements<PresenceMember>.heartbeat) { [self] in
            execute { if $0.presence?.tick(now: $0.now) == true { $0.presenceChangedElsewhere() } }
        })
    }

    private func startViewers() {
        guard followers.viewerViews != nil else { return }
        let viewers = ClusterViewers(room: name, node: node) { [unowned self] in
            assumeIsolated { room in
                let views = room.followers.viewerViews!
                return views.viewers.map { AnnouncedViewer(viewer: $0, holds: views.projection(of: $0)?.isEmpty == false) }
            }
        }
        self.viewers = viewers
        viewers.start { [self] message in
            execute { $0.viewers?.receive(message, now: $0.now) }
        }
        timers.append(environment.runtime.clock.startTimer(every: NodeAnnouncements<AnnouncedViewer>.heartbeat) { [self] in
            execute { $0.viewers?.tick(now: $0.now) }
        })
    }

    // MARK: Replies

    /// Where this node's replica is, for the reply gate.
    var position: ReplicaPosition {
        ReplicaPosition(sequence: replica.lastSequence, version: version, hasEpoch: followers.hasEpoch)
    }

    /// Sends the replies the gate released: to this node's sessions, or back to the node that
    /// forwarded the action. Called after every event of the gate: while replies wait, a check
    /// of overdue ones is due.
    func send(_ releases: [ReplyGate<ActionReplyTarget>.Release]) {
        var deliveries: [RoomDelivery] = []
        for release in releases {
            switch release.target {
            case .remote(_, let respond): respond(release.outcome)
            case .session: deliveries.append(.reply(release.outcome, to: release.target))
            }
        }
        if !deliveries.isEmpty { output.deliver(deliveries) }
        scheduleAnswerCheck()
    }

    // MARK: Bounded answers

    /// Every action sent to this node is answered within this of its arrival, whatever is
    /// paused, slow or cut off (a NATS server, the owner, this node's link to the log): an ack,
    /// or a truthful error.
    var answerLimit: Duration { node.lease }

    /// An action that found no owner waits this long for this node to take the room: a dead
    /// owner's lease runs out up to a lease after its last renewal, and tries come every 250 ms.
    var takeoverLimit: Duration { answerLimit + .milliseconds(250) }

    /// When a reply to an action this node took at `received` is due: a lease after it came, but
    /// at least `replyGrace` after the reply, so an action that waited for a takeover is not
    /// answered unknown for that wait alone.
    func replyDeadline(received: ContinuousClock.Instant) -> ContinuousClock.Instant {
        max(received + answerLimit, now + Self.replyGrace)
    }

    /// Many times what an append and its replica's turn take when the log is well.
    static let replyGrace: Duration = .milliseconds(250)

    /// The owner's reply to `target` (another node's forwarded action: that node bounds its wait).
    func replyDeadline(for target: ActionReplyTarget) -> ContinuousClock.Instant {
        target.received.map(replyDeadline(received:)) ?? now + answerLimit
    }

    /// An answer past the limit says what is known: the action may have been applied (its sender
    /// asks again under the same number and gets the outcome once the room knows it).
    var lateOutcome: ActionOutcome {
        .failed(ProtocolError(.unavailable, "room \(name) did not confirm this action in time (its log or owner is slow or unreachable); ask again under the same number",
                              applied: .unknown))
    }

    /// Makes sure a check runs when the first waiting answer is due (earlier than one scheduled).
    func scheduleAnswerCheck() {
        let deadlines = [gate.nextDeadline, waitingActions.map(\.sent).min().map { $0 + answerLimit },
                         actionsWithoutOwner.map(\.sent).min().map { $0 + takeoverLimit }]
        guard let next = deadlines.compactMap({ $0 }).min(), answerCheck.map({ next < $0.at }) ?? true else { return }
        answerCheck?.timer.cancel()
        let timer = environment.runtime.clock.startTimer(every: max(next - now, .milliseconds(10))) { [self] in execute { $0.checkAnswers() } }
        answerCheck = (timer, next)
    }

    private func checkAnswers() {
        answerCheck?.timer.cancel()
        answerCheck = nil
        let loading = ActionOutcome.failed(Self.notApplied("room \(name) is still loading on this node"))
        send(Self.removeOverdue(&waitingActions, now: now, limit: answerLimit, answer: loading)
             + Self.removeOverdue(&actionsWithoutOwner, now: now, limit: takeoverLimit, answer: noOwnerInTime)
             + gate.overdue(now: now, unknown: lateOutcome))
    }

    private static func removeOverdue(_ requests: inout [ActionForwarder<ActionReplyTarget>.Request], now: ContinuousClock.Instant,
                                      limit: Duration, answer: ActionOutcome) -> [ReplyGate<ActionReplyTarget>.Release] {
        let overdue = requests.filter { now - $0.sent >= limit }
        requests.removeAll { now - $0.sent >= limit }
        return overdue.map { .init(outcome: answer, target: $0.target) }
    }

    /// An action that found no owner to take it within the limit: nothing was applied.
    var noOwnerInTime: ActionOutcome { .failed(Self.notApplied("room \(name) had no owner that could take this action in time")) }

    /// The answer to an action whose turn never reached the log (another owner's entry holds
    /// its place, or it was not appended when this node stopped owning).
    var notStored: ActionOutcome { .failed(Self.notApplied("room \(name) changed owners before this action was stored")) }

    /// `unavailable` for an action certainly not applied: safe to send again.
    static func notApplied(_ message: String) -> ProtocolError { ProtocolError(.unavailable, message + "; nothing was applied: try again") }
}

extension ActionReplyTarget {
    /// Whether a session of this node gets the reply (else the node that forwarded the action).
    var isLocal: Bool {
        if case .session = self { true } else { false }
    }

    /// When this node took a session's action (another node's forward: that node bounds its wait).
    var received: ContinuousClock.Instant? {
        if case .session(_, _, _, let received) = self { received } else { nil }
    }
}

/// Holds a one-shot timer so its tick can cancel it.
private final class TimerBox: @unchecked Sendable {
    var timer: (any ServerTimer)?
}
