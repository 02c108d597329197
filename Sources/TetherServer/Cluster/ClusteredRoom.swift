import Dispatch
import Logging
import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// A shared room on one node of a cluster.
///
/// Every node with interest in the room keeps a *replica*: the room's document, epoch, version
/// and recent history, built from the room's log (its latest snapshot, then the log after it)
/// and kept current by the log's republished messages, checked for gaps by stream sequence. The
/// replica serves this node's joins and fans each version out to this node's subscribers,
/// sharing the frame bytes the owner encoded.
///
/// One node at a time *owns* the room: it runs the ViewModel (a local `Room`) and appends each
/// version step to the log with a checked append (expected last sequence plus a message id per
/// slot), which is the fence: two nodes that both believe they own the room can never both
/// extend its history. A lease in a KV bucket keeps owners from fighting; it is not trusted for
/// safety. Actions arriving on another node are forwarded to the owner; acks return to the
/// client only once its node's replica has delivered that version, so "patch before ack" holds.
///
/// An ack names the log entry that carries the action: the owner holds each reply until the
/// log holds *its own* entry with that version step (same owner term and slot), learned from the
/// append's acknowledgement or from the replica meeting the entry in the log. Another owner's
/// entry in that place means the action was not stored: its sender hears "not applied". An
/// append whose fate the owner lost track of (it stopped owning with one in flight) is decided
/// by the entry the log holds in its place, or reported as unknown.
///
/// Threading rule: all state is confined to `queue` (a room executor); NATS callbacks, the
/// hub and the owner's `Room` hand their work to it. Hence `@unchecked Sendable`.
final class ClusteredRoom: RoomEndpoint, @unchecked Sendable {
    let name: String
    let kind: ViewModelKind
    private let node: ClusterNode
    private let environment: RoomEnvironment
    private let output: any RoomOutput
    fileprivate let queue: any RoomExecutor
    private var logger: Logger { environment.logger }

    // Replica.
    private enum Phase { case loading, ready, stopped }
    private var phase = Phase.loading
    /// This node's subscribers and what they have seen of the log: epoch (none until the log
    /// has one), version, history, snapshot cache, viewers' views (Rooms/RoomFollowers.swift).
    private var followers: RoomFollowers
    private var version: Int { followers.version }
    private var document: JSON = .null
    /// The ViewModel's stored state at `version`, which clients never see; nil when the log
    /// holds none (entries of a version of tetherd without stored state).
    private var storedDocument: JSON?
    /// Stream sequence of the last log message applied.
    private var lastSequence: UInt64 = 0
    private var isCatchingUp = false
    /// Live messages that arrived while the log was being read.
    private var liveBuffer: [NATSMessage] = []
    private var fanSubscription: (any ClusterSubscription)?
    private var ownerSubscription: (any ClusterSubscription)?
    /// Actions forwarded to the owner and not answered yet, by a number of this node's.
    private var forwards: [Int: ActionReplyTarget] = [:]
    private var nextForward = 0
    private var waitingJoins: [(SessionHandle, ResumePoint?, Int?, PresenceJoin?)] = []
    /// Who is here, on every node (Presence/ClusterPresence.swift); nil for kinds without presence.
    private let presence: ClusterPresence?
    private var presenceTimer: (any ServerTimer)?
    /// This node's viewers announced to the owner, and every node's (for when this node owns).
    private var viewers: ClusterViewers?
    private var viewersTimer: (any ServerTimer)?
    private var waitingActions: [(String, JSON?, ActionNumber?, ActionReplyTarget)] = []
    /// Forwarded actions' outcomes to deliver once the replica reached `version` (patch before ack).
    private var pendingReplies: [(version: Int, delivery: RoomDelivery)] = []
    /// The owner's replies whose version step the log holds at `sequence`: this node's sessions
    /// get theirs once the replica applied that entry (patch before ack).
    private var storedReplies: [(sequence: UInt64, delivery: RoomDelivery)] = []
    private var lastSnapshotVersion = 0
    /// The numbered actions' outcomes the log's entries carry, as the owner's `Room` remembers
    /// them: a new owner starts from these, so a repeat after a failover is answered too.
    private var outcomes = ActionOutcomes()
    private var checkTimer: (any ServerTimer)?

    // Ownership.
    private struct Ownership {
        let room: Room
        /// Names this time of owning the room in every entry it appends (LogEntry.term).
        let term: String
        var leaseRevision: UInt64
        let actions: any ClusterSubscription
        let renewal: any ServerTimer
    }
    private var ownership: Ownership?
    private var isAcquiring = false
    private var afterAcquiring: [(Bool) -> Void] = []

    // Appends (owner only).
    fileprivate enum Append {
        /// A version step, with its operations on the ViewModel's stored state, the projections it
        /// changed on each node (per-viewer values) and the numbered action it applied.
        case patch(PatchFrame, stored: [PatchOperation], projections: JSON?, applied: ActionNumber?)
        case epochStart(epoch: String, version: Int, frame: [UInt8], stored: JSON)
    }
    private var appendQueue: [Append] = []
    private var inFlight: (entry: LogEntry, count: Int, firstTried: ContinuousClock.Instant, sent: ContinuousClock.Instant)?
    /// Where the owner's last stored entry is in the log, and the version it brought.
    private var appendedSequence: UInt64 = 0
    private var appendedVersion = 0
    /// The owner's last produced version: replies produced now wait for it.
    private var producedVersion = 0
    /// The owner's replies, in the order produced, each waiting for the entry of its version step.
    private var heldReplies: [HeldReply] = []
    /// After a step-down with an append in flight: that append, decided by the entry the log
    /// holds after `after` (it, or another owner's), or unknown once `deadline` passes.
    private var undecided: (entry: LogEntry, after: UInt64, replies: [HeldReply], deadline: ContinuousClock.Instant)?

    private struct HeldReply {
        let version: Int
        let outcome: ActionOutcome
        let target: ActionReplyTarget
    }

    nonisolated let stopped = DispatchGroup()
    /// The followers' epoch and version cell, kept here too: the hub reads it from its own thread.
    let published: RoomVersionCell
    static let appendGiveUp: Duration = .seconds(10)
    /// How long an append whose fate its owner lost may take to show up in the log (a retry's
    /// timeout) before its actions are answered as unknown.
    static let undecidedLimit: Duration = .seconds(5)
    static let maxAppendBytes = 256 << 10

    init(name: String, kind: ViewModelKind, node: ClusterNode, environment: RoomEnvironment, output: any RoomOutput) {
        self.name = name
        self.kind = kind
        self.node = node
        self.environment = environment
        self.output = output
        self.presence = kind.hasPresence ? ClusterPresence(room: name, node: node, maxMembers: environment.configuration.maxPresenceMembers,
                                                                    window: environment.configuration.presenceWindow, clock: environment.runtime.clock) : nil
        self.followers = RoomFollowers(room: name, epoch: "", perViewer: kind.instantiate(room: name).hasPerViewerValues, presence: presence,
                                       configuration: environment.configuration, metrics: node.metrics)
        self.published = followers.published
        self.queue = environment.runtime.makeRoomExecutor(name)
        stopped.enter()
    }

    // MARK: Endpoint

    func start(after predecessor: (any RoomEndpoint)?) {
        queue.execute { [self] in
            predecessor?.waitUntilStopped()
            subscribeToLog()
            startPresence()
            startViewers()
            loadSnapshot()
            // A quarter lease: a dead or paused owner's room has a new owner within 1.25 leases.
            let interval = node.lease / 4
            checkTimer = environment.runtime.clock.startTimer(every: interval) { [self] in queue.execute { self.checkOwner() } }
        }
    }

    func join(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence join: PresenceJoin?) {
        queue.execute { [self] in
            guard phase == .ready, followers.hasEpoch else {
                waitingJoins.append((session, since, id, join))
                if phase == .ready { ensureOwner() }
                return
            }
            subscribe(session, since: since, id: id, presence: join)
        }
    }

    func updatePresence(_ session: SessionHandle, data: JSON, id: Int?) {
        queue.execute { [self] in
            if let refusal = followers.presenceRefusal(session, id: id) { return output.deliver([refusal]) }
            // The owner's ViewModel hears of the change from `presence` (`onMemberChange`).
            let outcome = followers.updatePresence(session, data: data, windowEnded: presenceWindowEnds)
            output.deliver(outcome.deliveries + followers.presenceAck(id, to: session))
        }
    }

    // MARK: Presence

    private func startPresence() {
        guard let presence else { return }
        presence.start { [self] message in
            queue.execute { self.deliverPresence(ifChanged: self.presence?.receive(message, now: self.environment.runtime.clock.now) == true) }
        }
        presenceTimer = environment.runtime.clock.startTimer(every: ClusterPresence.heartbeat) { [self] in
            queue.execute { self.deliverPresence(ifChanged: self.presence?.tick(now: self.environment.runtime.clock.now) == true) }
        }
    }

    // MARK: Per-viewer values

    private func startViewers() {
        guard followers.viewerViews != nil else { return }
        let viewers = ClusterViewers(room: name, node: node) { [unowned self] in
            let views = followers.viewerViews!
            return views.viewers.map { AnnouncedViewer(viewer: $0, holds: views.projection(of: $0)?.isEmpty == false) }
        }
        self.viewers = viewers
        viewers.start { [self] message in
            queue.execute { self.viewers?.receive(message, now: self.environment.runtime.clock.now) }
        }
        viewersTimer = environment.runtime.clock.startTimer(every: ClusterViewers.heartbeat) { [self] in
            queue.execute { self.viewers?.tick(now: self.environment.runtime.clock.now) }
        }
    }

    /// Subscribes `session` (a viewer new to this node sees the shared document alone until the
    /// owner's next step brings theirs), announcing a viewer new to this node, and one it no
    /// longer has, to the owner.
    private func addFollower(_ session: SessionHandle, since: ResumePoint?) -> [RoomDelivery] {
        let previous = followers.viewerViews?.viewer(of: session)
        let isNew = followers.viewerViews?.projection(of: session.viewer) == nil
        let deliveries = followers.add(session, since: since, project: { _ in [:] }, document: { document })
        guard let viewers, let views = followers.viewerViews else { return deliveries }
        if isNew { viewers.add(AnnouncedViewer(viewer: session.viewer, holds: false)) }
        if let previous, previous != session.viewer, views.projection(of: previous) == nil { viewers.remove(previous) }
        return deliveries
    }

    private func removeFollower(_ session: SessionHandle) {
        let viewer = followers.viewerViews?.viewer(of: session)
        guard followers.remove(session), let viewer, followers.viewerViews?.projection(of: viewer) == nil else { return }
        viewers?.remove(viewer)
    }

    /// After other nodes' members changed.
    private func deliverPresence(ifChanged changed: Bool) {
        guard changed, phase != .stopped else { return }
        let deliveries = followers.presenceChanged(windowEnded: presenceWindowEnds)
        if !deliveries.isEmpty { output.deliver(deliveries) }
    }

    private var presenceWindowEnds: @Sendable () -> Void {
        { [self] in queue.execute { self.presenceWindowEnded() } }
    }

    private func presenceWindowEnded() {
        guard phase != .stopped else { return }
        let deliveries = followers.presenceWindowEnded()
        if !deliveries.isEmpty { output.deliver(deliveries) }
    }

    func leave(_ session: SessionHandle) {
        queue.execute { [self] in
            removeFollower(session)
            waitingJoins.removeAll { $0.0 == session }
            let deliveries = followers.leavePresence(session, windowEnded: presenceWindowEnds).deliveries
            if !deliveries.isEmpty { output.deliver(deliveries) }
        }
    }

    func resync(_ session: SessionHandle) {
        queue.execute { [self] in
            guard followers.subscribers.contains(session), followers.hasEpoch else { return }
            output.deliver([followers.snapshot(for: session, document: { document })])
        }
    }

    func perform(_ action: String, args: JSON?, id: Int, number: ActionNumber?, from session: SessionHandle) {
        queue.execute { [self] in act(action, args: args, number: number, replyTo: .session(session, id: id, room: name)) }
    }

    func stop() {
        queue.execute { [self] in finish() }
    }

    func waitUntilStopped() { stopped.wait() }

    func stopAndWait() async {
        stop()
        await withCheckedContinuation { continuation in
            stopped.notify(queue: .global()) { continuation.resume() }
        }
    }

    // MARK: Replica: loading and following the log

    private func subscribeToLog() {
        do {
            fanSubscription = try node.messaging.subscribe(node.fanSubject(name)) { [self] message in
                queue.execute { self.receiveLive(message) }
            }
            ownerSubscription = try node.messaging.subscribe(node.ownerSubject(name)) { [self] message in
                queue.execute { self.ownerChanged(announcedBy: String(decoding: message.data, as: UTF8.self)) }
            }
        } catch {
            logger.error("cluster: room \(name): cannot follow its log: \(error)")
        }
    }

    /// Another node took the room: actions forwarded before it did went to the old owner (paused,
    /// cut off or dead), whose answer may never come. The new owner answers those it received
    /// itself within a moment; the rest are answered as unknown now rather than after the
    /// forward's timeout, so their clients go on (to the new owner) about a lease after the fault.
    private func ownerChanged(announcedBy owner: String) {
        guard !forwards.isEmpty else { return }
        let stuck = Array(forwards.keys)
        retry(after: .milliseconds(250)) { room in
            for number in stuck {
                guard let target = room.forwards.removeValue(forKey: number) else { continue }
                room.reply(.failed(ProtocolError(.unavailable, "room \(room.name) changed owners while this action was with the old owner",
                                                 applied: .unknown)), to: target, afterVersion: 0)
            }
        }
    }

    private func loadSnapshot() {
        isCatchingUp = true
        node.snapshots.get(node.token(name)) { [self] result in
            queue.execute { self.snapshotLoaded(result) }
        }
    }

    private func snapshotLoaded(_ result: Result<NATSKeyValue.Entry?, NATSError>) {
        guard phase != .stopped else { return }
        switch result {
        case .failure(let error):
            logger.warning("cluster: room \(name): cannot read its snapshot (\(error)); retrying")
            retry(after: .milliseconds(500)) { $0.loadSnapshot() }
        case .success(let entry):
            if let entry, let snapshot = ClusterSnapshot(entry.value) {
                if let undecided, snapshot.sequence > undecided.after {
                    // The entry that would decide it is behind the snapshot: not read any more.
                    self.undecided?.deadline = environment.runtime.clock.now
                    giveUpUndecided()
                }
                followers.restart(epoch: snapshot.epoch, version: snapshot.version)
                document = snapshot.state
                storedDocument = snapshot.stored
                lastSequence = snapshot.sequence
                lastSnapshotVersion = snapshot.version
                outcomes = ActionOutcomes()
                outcomes.restore(applied: snapshot.actions)
            }
            catchUp()
        }
    }

    /// Reads the log after `lastSequence` to its end, then applies what arrived live meanwhile.
    private func catchUp() {
        isCatchingUp = true
        node.metrics.catchUps.increment()
        let start = lastSequence + 1
        node.log.read(stream: node.stream(name), subject: node.logSubject(name), from: start, handler: { [self] stored in
            queue.execute { self.apply(stored.headers, stored.data, sequence: stored.sequence) }
        }, completion: { [self] result in
            queue.execute { self.caughtUp(result) }
        })
    }

    private func caughtUp(_ result: Result<UInt64?, NATSError>) {
        guard phase != .stopped else { return }
        if case .failure(let error) = result {
            logger.warning("cluster: room \(name): reading its log failed (\(error)); retrying")
            retry(after: .milliseconds(500)) { $0.catchUp() }
            return
        }
        isCatchingUp = false
        let buffered = liveBuffer
        liveBuffer.removeAll()
        for message in buffered { receiveLive(message) }
        guard !isCatchingUp, phase == .loading else { return }
        phase = .ready
        ensureOwner()
        serveWaiting()
        drainWaitingActions()
    }

    private func receiveLive(_ message: NATSMessage) {
        guard phase != .stopped else { return }
        if isCatchingUp {
            liveBuffer.append(message)
            return
        }
        guard let sequence = message.headers["Nats-Sequence"].flatMap({ UInt64($0) }) else { return }
        if sequence <= lastSequence { return }  // read already while catching up
        let previous = message.headers["Nats-Last-Sequence"].flatMap { UInt64($0) } ?? 0
        guard previous == lastSequence else {
            // A gap: something between was missed. Read it from the log before going on.
            logger.debug("cluster: room \(name): gap after sequence \(lastSequence) (next says \(previous)); catching up")
            liveBuffer.append(message)
            catchUp()
            return
        }
        apply(message.headers, message.data, sequence: sequence)
    }

    /// Applies one log message: a version step fans out to this node's subscribers.
    private func apply(_ headers: NATSHeaders, _ data: [UInt8], sequence: UInt64) {
        guard sequence > lastSequence else { return }
        guard let entry = LogEntry(headers: headers, data: data) else {
            logger.error("cluster: room \(name): log message \(sequence) is not a Tether entry; skipped")
            lastSequence = sequence
            return
        }
        decide(entry, at: sequence)
        switch entry.kind {
        case .snapshot:
            guard case .snapshot(_, let newEpoch, let newVersion, let state)? = try? ServerMessage.decode(entry.frame) else { return }
            followers.restart(epoch: newEpoch, version: newVersion, frame: entry.frame)
            outcomes = ActionOutcomes()  // a new epoch's versions: the old outcomes name none of them
            document = state
            storedDocument = entry.stored
            lastSequence = sequence
            // A new epoch: everyone here starts over from its snapshot (with their projection).
            output.deliver(followers.subscribers.all.map { followers.snapshot(for: $0, document: { document }) })
            serveWaiting()
        case .patch:
            guard entry.epoch == followers.epoch, entry.from == version,
                  case .patch(_, _, _, _, let operations)? = try? ServerMessage.decode(entry.frame) else {
                logger.error("cluster: room \(name): log message \(sequence) (\(entry.epoch) \(entry.from)->\(entry.version)) does not continue version \(version) of \(followers.hasEpoch ? followers.epoch : "no epoch"); reloading")
                reload()
                return
            }
            do {
                try document.apply(operations)
            } catch {
                logger.error("cluster: room \(name): log message \(sequence) does not apply (\(error)); reloading")
                reload()
                return
            }
            applyStored(entry.stored, at: sequence)
            lastSequence = sequence
            guard let patch = PatchFrame(room: name, epoch: entry.epoch, from: entry.from, version: entry.version, encodedFrame: entry.frame,
                                         compressAbove: environment.configuration.compressionThreshold) else {
                logger.error("cluster: room \(name): log message \(sequence) has an unreadable frame; reloading")
                reload()
                return
            }
            // What the owner says this node's viewers see now; the operations are this node's
            // own, from what its sessions hold (robust against stale messages).
            let given = entry.projections?[node.name]?.objectValue
            let changes = given == nil ? [:] : followers.updateViews { viewer in given![viewer.id]?.objectValue }
            outcomes.record(applied: entry.actions)
            let deliveries = followers.follow(patch, changes: changes)
            if !deliveries.isEmpty { output.deliver(deliveries) }
        }
        releaseReplies()
        releaseStoredReplies()
        if ownership != nil, version - lastSnapshotVersion >= ClusterNode.snapshotInterval { writeSnapshot() }
    }

    /// A step's operations on the stored state. A replica that holds none (the log began before
    /// tetherd stored any) starts from the step that sets it whole (`RoomState.storedReplay`).
    private func applyStored(_ json: JSON?, at sequence: UInt64) {
        guard let json else { return }
        do {
            guard let (base, operations) = RoomState.storedReplay(try JSONPatch.decode(json), onto: storedDocument) else { return }
            var stored = base
            try stored.apply(operations)
            storedDocument = stored
        } catch {
            logger.error("cluster: room \(name): log message \(sequence)'s stored state change does not apply (\(error)); its stored state is dropped")
            storedDocument = nil
        }
    }

    /// Starts the replica over from the latest snapshot (the log disagreed with it).
    private func reload() {
        followers.restart(epoch: "", version: 0)
        outcomes = ActionOutcomes()
        document = .null
        storedDocument = nil
        lastSequence = 0
        loadSnapshot()
    }

    private func writeSnapshot() {
        guard followers.hasEpoch else { return }
        lastSnapshotVersion = version
        let snapshot = ClusterSnapshot(epoch: followers.epoch, version: version, sequence: lastSequence, state: document, stored: storedDocument,
                                       actions: outcomes.applied)
        node.snapshots.put(node.token(name), snapshot.encoded) { [logger, name] result in
            if case .failure(let error) = result { logger.warning("cluster: room \(name): snapshot not written: \(error)") }
        }
    }

    // MARK: Replica: subscribers and replies

    private func serveWaiting() {
        guard phase == .ready, followers.hasEpoch else { return }
        let joins = waitingJoins
        waitingJoins.removeAll()
        for (session, since, id, join) in joins { subscribe(session, since: since, id: id, presence: join) }
    }

    private func subscribe(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence join: PresenceJoin?) {
        guard followers.hasEpoch else { return }
        var deliveries = addFollower(session, since: since)
        // The owner's ViewModel hears of a change of members from `presence` (`onMemberChange`).
        deliveries += followers.joinPresence(session, join, windowEnded: presenceWindowEnds).deliveries
        output.deliver(deliveries + followers.joinAck(id, to: session))
    }

    /// Delivers `delivery` once this node's replica has delivered `version`.
    private func deliver(_ delivery: RoomDelivery, afterVersion version: Int) {
        if self.version >= version, followers.hasEpoch {
            output.deliver([delivery])
        } else {
            pendingReplies.append((version, delivery))
        }
    }

    private func releaseReplies() {
        guard !pendingReplies.isEmpty else { return }
        let due = pendingReplies.filter { $0.version <= version }
        guard !due.isEmpty else { return }
        pendingReplies.removeAll { $0.version <= version }
        output.deliver(due.map(\.delivery))
    }

    // MARK: Actions

    private func act(_ action: String, args: JSON?, number: ActionNumber?, replyTo target: ActionReplyTarget, attempt: Int = 0) {
        guard phase != .stopped else { return reply(.failed(Self.notApplied("room \(name) is closing on this node")), to: target, afterVersion: 0) }
        if let ownership {
            ownership.room.perform(action, args: args, number: number, replyTo: target)
            return
        }
        guard phase == .ready else {
            waitingActions.append((action, args, number, target))
            return
        }
        node.metrics.forwardedActions.increment()
        nextForward += 1
        let forward = nextForward
        forwards[forward] = target
        node.messaging.request(node.actionSubject(name), ForwardedAction.request(name: action, args: args, number: number, viewer: target.viewer),
                               timeout: forwardTimeout) { [self] result in
            queue.execute {
                // Answered already: the owner changed while it waited (`ownerChanged`).
                guard self.forwards.removeValue(forKey: forward) != nil else { return }
                self.forwarded(result, action: action, args: args, number: number, target: target, attempt: attempt)
            }
        }
    }

    private func forwarded(_ result: Result<NATSMessage, NATSError>, action: String, args: JSON?, number: ActionNumber?,
                           target: ActionReplyTarget, attempt: Int) {
        switch result {
        case .success(let message):
            let outcome = ForwardedAction.parseReply(message.data)
            if case .applied(let version) = outcome {
                reply(outcome, to: target, afterVersion: version)
            } else {
                reply(outcome, to: target, afterVersion: 0)
            }
        case .failure(.noResponders):
            // Nobody owns the room (or its owner just died): take it, or wait for its lease to end.
            let limit = Int((node.lease + .seconds(3)) / .milliseconds(250))
            guard attempt < limit else {
                return reply(.failed(Self.notApplied("room \(name) has no owner the cluster can reach")), to: target, afterVersion: 0)
            }
            acquireOwnership { [self] acquired in
                if acquired {
                    act(action, args: args, number: number, replyTo: target, attempt: attempt + 1)
                } else {
                    retry(after: .milliseconds(250)) { $0.act(action, args: args, number: number, replyTo: target, attempt: attempt + 1) }
                }
            }
        case .failure(let error):
            reply(.failed(ProtocolError(.unavailable, "the room's owner did not answer (\(error))", applied: .unknown)),
                  to: target, afterVersion: 0)
        }
    }

    private func reply(_ outcome: ActionOutcome, to target: ActionReplyTarget, afterVersion version: Int) {
        switch target {
        case .session: deliver(.reply(outcome, to: target), afterVersion: version)
        case .remote(_, let respond): respond(outcome)
        }
    }

    /// The answer to an action whose turn never reached the log (another owner's entry holds
    /// its place, or it was not appended when this node stopped owning).
    private var notStored: ActionOutcome { .failed(Self.notApplied("room \(name) changed owners before this action was stored")) }

    /// `unavailable` for an action certainly not applied: safe to send again.
    static func notApplied(_ message: String) -> ProtocolError { ProtocolError(.unavailable, message + "; nothing was applied: try again") }

    /// A forwarded action's owner answers within its append's retries, or is paused, cut off or
    /// dead: then the answer is unknown, and sooner is better (a new owner takes over in a lease).
    private var forwardTimeout: Duration { max(node.lease, .seconds(1)) }

    /// An action forwarded here by another node.
    private func receiveForwarded(_ message: NATSMessage) {
        let respond: @Sendable (ActionOutcome) -> Void = { outcome in try? message.respond(ForwardedAction.reply(outcome)) }
        guard let ownership else {
            // Not the owner any more: the sender's node sees this and retries on the new owner.
            respond(.failed(Self.notApplied("room \(name) is changing owners")))
            return
        }
        guard let (action, args, number, viewer) = ForwardedAction.parseRequest(message.data) else {
            respond(.failed(ProtocolError(.badMessage, "unreadable forwarded action")))
            return
        }
        ownership.room.perform(action, args: args, number: number, replyTo: .remote(viewer: viewer, respond: respond))
    }

    // MARK: Ownership

    /// Makes sure somebody owns the room (so its timers run and actions have a home).
    private func ensureOwner() {
        guard ownership == nil, !isAcquiring, phase == .ready else { return }
        node.owners.get(node.token(name)) { [self] result in
            queue.execute {
                if case .success(nil) = result { self.acquireOwnership { _ in } }
            }
        }
    }

    /// Every quarter lease: a room with subscribers here and no owner gets one (failover).
    private func checkOwner() {
        guard phase == .ready, ownership == nil, !followers.subscribers.isEmpty || !waitingJoins.isEmpty else { return }
        ensureOwner()
    }

    private func acquireOwnership(then done: @escaping (Bool) -> Void) {
        if ownership != nil { return done(true) }
        afterAcquiring.append(done)
        guard !isAcquiring else { return }
        isAcquiring = true
        let token = node.token(name)
        node.owners.create(token, Array(node.name.utf8)) { [self] result in
            queue.execute {
                switch result {
                case .success(let revision):
                    self.takeOver(leaseRevision: revision)
                case .failure(.keyExists):
                    // Ours from before a restart under the same node name? Then take it back.
                    self.node.owners.get(token) { result in
                        self.queue.execute {
                            if case .success(let entry?) = result, entry.value == Array(self.node.name.utf8) {
                                self.takeOver(leaseRevision: entry.revision)
                            } else {
                                self.finishAcquiring(false)
                            }
                        }
                    }
                case .failure:
                    self.finishAcquiring(false)
                }
            }
        }
    }

    private func finishAcquiring(_ acquired: Bool) {
        isAcquiring = false
        let waiting = afterAcquiring
        afterAcquiring.removeAll()
        for done in waiting { done(acquired) }
    }

    /// The lease is ours: read the log to its end, then run the ViewModel from its state. A read
    /// that fails (its stream electing a leader) is tried again for a lease before giving up.
    private func takeOver(leaseRevision: UInt64, since started: ContinuousClock.Instant? = nil) {
        guard phase != .stopped else { return finishAcquiring(false) }
        let started = started ?? environment.runtime.clock.now
        // Catch up first: the previous owner's last versions may not have reached us yet.
        node.log.read(stream: node.stream(name), subject: node.logSubject(name), from: lastSequence + 1, handler: { [self] stored in
            queue.execute { self.apply(stored.headers, stored.data, sequence: stored.sequence) }
        }, completion: { [self] result in
            queue.execute {
                if case .failure(let error) = result {
                    guard self.environment.runtime.clock.now - started < self.node.lease else {
                        self.logger.warning("cluster: room \(self.name): cannot read its log to take it over (\(error))")
                        self.node.owners.delete(self.node.token(self.name)) { _ in }
                        return self.finishAcquiring(false)
                    }
                    return self.retry(after: .milliseconds(100)) { $0.takeOver(leaseRevision: leaseRevision, since: started) }
                }
                self.becomeOwner(leaseRevision: leaseRevision)
            }
        })
    }

    private func becomeOwner(leaseRevision: UInt64) {
        // The same epoch continues when the ViewModel takes the state; else (the log holds none,
        // or the state no longer restores) the owner's `Room` starts a new one in the log.
        let restored = followers.hasEpoch
            ? StoredRoom(epoch: followers.epoch, version: version, state: document, stored: storedDocument, patches: [], actions: outcomes.applied)
            : nil
        let term = RandomID.make(length: 10)
        let room = Room(name: name, kind: kind, environment: environment, log: OwnerLog(room: self, term: term, restored: restored))
        room.start(after: nil)
        appendedSequence = lastSequence
        appendedVersion = version
        producedVersion = version
        let subscription: any ClusterSubscription
        do {
            // One queue group: a node that still believes it owns the room (paused past its lease,
            // not yet fenced) and the new owner must never both get one forwarded action. Both
            // would answer it, and the first answer wins: the old owner's "not stored, nothing was
            // applied" could beat the new owner's ack of the very same action.
            subscription = try node.messaging.subscribe(node.actionSubject(name), queueGroup: "owner") { [self] message in
                queue.execute { self.receiveForwarded(message) }
            }
        } catch {
            logger.warning("cluster: room \(name): cannot take forwarded actions (\(error)); not taking it over")
            room.stop()
            node.owners.delete(node.token(name)) { _ in }
            return finishAcquiring(false)
        }
        let renewal = environment.runtime.clock.startTimer(every: node.lease / 3) { [self] in queue.execute { self.renewLease() } }
        ownership = Ownership(room: room, term: term, leaseRevision: leaseRevision, actions: subscription, renewal: renewal)
        node.didTakeOwnership(of: name)
        try? node.messaging.publish(node.ownerSubject(name), Array(node.name.utf8))
        logger.info("cluster: node \(node.name) owns room \(name) from version \(version) of \(restored?.epoch ?? "a new epoch")")
        // The room's executor runs its start (a new epoch's snapshot goes to the log first)
        // before anything handed to it now.
        feedOwner(room)
        finishAcquiring(true)
        drainWaitingActions()
    }

    /// Gives the owner's ViewModel what the cluster knows of the room, then every change as it
    /// arrives: the members on every node (its `context.presence`) and the viewers of every
    /// node's sessions (for per-viewer values). What nodes hold of projections is not known
    /// after a change of owner, so each viewer's projection is sent once whatever it is.
    private func feedOwner(_ room: Room) {
        if let presence {
            room.clusterPresenceChanged(listed: Array(presence.document.members.values), left: [])
            presence.onMemberChange = { listed, left in room.clusterPresenceChanged(listed: listed, left: left) }
        }
        if let viewers {
            for (node, announced) in viewers.all where !announced.isEmpty {
                room.clusterViewersChanged(node: node, set: announced.map { AnnouncedViewer(viewer: $0.viewer, holds: true) }, removed: [])
            }
            viewers.onChange = { node, set, removed in room.clusterViewersChanged(node: node, set: set, removed: removed) }
            viewers.sync()
        }
    }

    private func drainWaitingActions() {
        let actions = waitingActions
        waitingActions.removeAll()
        for (action, args, number, target) in actions { act(action, args: args, number: number, replyTo: target) }
    }

    private func renewLease() {
        guard let revision = ownership?.leaseRevision else { return }
        node.owners.update(node.token(name), Array(node.name.utf8), lastRevision: revision) { [self] result in
            queue.execute {
                switch result {
                case .success(let newRevision): self.ownership?.leaseRevision = newRevision
                case .failure(.wrongRevision), .failure(.keyExists):
                    self.stepDown("another node holds its lease now", releaseLease: false, fenced: false)
                case .failure(let error):
                    self.logger.debug("cluster: room \(self.name): lease not renewed (\(error)); the log still fences")
                }
            }
        }
    }

    /// Stops owning: the ViewModel stops and the replica goes on following the log. Turns not
    /// appended are dropped: their actions were not applied. The append in flight, if any, was
    /// refused when `fenced` (another owner's entry holds its place); else the log decides it.
    private func stepDown(_ reason: String, releaseLease: Bool, fenced: Bool) {
        guard let ownership else { return }
        logger.notice("cluster: node \(node.name) stops owning room \(name): \(reason)")
        self.ownership = nil
        presence?.onMemberChange = nil
        viewers?.onChange = nil
        ownership.room.stop()
        ownership.actions.unsubscribe()
        ownership.renewal.cancel()
        node.didReleaseOwnership(of: name)
        if releaseLease { node.owners.delete(node.token(name)) { _ in } }
        appendQueue.removeAll()
        var inDoubt: [HeldReply] = []
        for held in heldReplies {
            if case .applied = held.outcome, !fenced, let inFlight, held.version <= inFlight.entry.version {
                inDoubt.append(held)
            } else if case .failed = held.outcome {
                answer(held.outcome, to: held.target, storedAt: nil)  // an error is true whatever the log holds
            } else {
                answer(notStored, to: held.target, storedAt: nil)
            }
        }
        heldReplies.removeAll()
        if let inFlight, !inDoubt.isEmpty {
            undecided = (inFlight.entry, appendedSequence, inDoubt, environment.runtime.clock.now + Self.undecidedLimit)
            retry(after: Self.undecidedLimit) { $0.giveUpUndecided() }
        }
        inFlight = nil
    }

    /// The undecided append did not show up in the log in time: its actions' fate is unknown.
    private func giveUpUndecided() {
        guard let undecided, environment.runtime.clock.now >= undecided.deadline || phase == .stopped else { return }
        self.undecided = nil
        let unknown = ActionOutcome.failed(ProtocolError(.unavailable, "room \(name) lost its owner while this action was being stored",
                                                         applied: .unknown))
        for held in undecided.replies { answer(unknown, to: held.target, storedAt: nil) }
    }

    /// Answers an owner's reply: at once for another node, or for a session of this node once the
    /// replica applied the entry at `storedAt` (nil: the reply does not wait for the log).
    private func answer(_ outcome: ActionOutcome, to target: ActionReplyTarget, storedAt sequence: UInt64?) {
        switch target {
        case .remote(_, let respond):
            respond(outcome)
        case .session:
            if let sequence, sequence > lastSequence {
                storedReplies.append((sequence, .reply(outcome, to: target)))
            } else {
                output.deliver([.reply(outcome, to: target)])
            }
        }
    }

    /// The log entry at `sequence` comes right after the owner's last stored one (or after the
    /// undecided append's place): it is the owner's append in flight, stored, or another owner's,
    /// and then the append never will be.
    private func decide(_ entry: LogEntry, at sequence: UInt64) {
        if let undecided, sequence > undecided.after {
            self.undecided = nil
            let stored = entry.isSameAppend(as: undecided.entry)
            for held in undecided.replies { answer(stored ? held.outcome : notStored, to: held.target, storedAt: stored ? sequence : nil) }
        }
        guard ownership != nil, sequence > appendedSequence else { return }
        if let inFlight, entry.isSameAppend(as: inFlight.entry) {
            confirm(sequence)  // its acknowledgement may still be on its way, or lost
        } else {
            stepDown("another node appended to its log (fenced)", releaseLease: false, fenced: true)
        }
    }

    // MARK: Appending (owner)

    /// A step the owner's ViewModel produced (from its `Room`, in owner term `term`), for the log.
    fileprivate func ownerAppended(_ append: Append, term: String) {
        guard ownership?.term == term else { return }  // a ViewModel that stopped owning: not appended
        switch append {
        case .patch(let patch, _, _, _): producedVersion = patch.version
        case .epochStart(_, let version, _, _): producedVersion = version
        }
        appendQueue.append(append)
        sendAppend()
    }

    /// What the owner's `Room` sends after its steps: its replies, which wait for the log (the
    /// owner's `Room` has no subscribers: each node's replica serves them). An ack waits for the
    /// version it names (a repeat's, answered from the record, may be stored long since); an
    /// error for every step produced before it.
    fileprivate func ownerReleased(_ deliveries: [RoomDelivery], term: String) {
        for case .reply(let outcome, let target) in deliveries {
            var version = producedVersion
            if case .applied(let applied) = outcome { version = applied }
            if ownership?.term != term {
                answer(notStored, to: target, storedAt: nil)  // a ViewModel that stopped owning: none of its turns reach the log
            } else if version <= appendedVersion {
                answer(outcome, to: target, storedAt: appendedSequence)
            } else {
                heldReplies.append(HeldReply(version: version, outcome: outcome, target: target))
            }
        }
    }

    /// Appends the next batch: one epoch start, or consecutive patches merged into one message.
    private func sendAppend() {
        guard inFlight == nil, !appendQueue.isEmpty, let term = ownership?.term else { return }
        let entry: LogEntry
        var count = 1
        switch appendQueue[0] {
        case .epochStart(let epoch, let version, let frame, let stored):
            entry = LogEntry(kind: .snapshot, epoch: epoch, from: version, version: version, node: node.name, term: term, frame: frame,
                             stored: stored)
        case .patch(let first, let firstStored, let firstProjections, let firstApplied):
            var last = first
            var bytes = first.operations.count
            while count < appendQueue.count, case .patch(let next, _, _, _) = appendQueue[count], next.epoch == first.epoch,
                  next.from == last.version, bytes + next.operations.count <= Self.maxAppendBytes {
                last = next
                bytes += next.operations.count
                count += 1
            }
            var frame = first.frame
            var stored = firstStored
            var projections = firstProjections
            var actions: [AppliedAction] = firstApplied.map { [($0, first.version)] } ?? []
            if count > 1 {
                stored = []
                projections = nil
                actions = []
                var patches: [PatchFrame] = []
                for case .patch(let patch, let storedOperations, let changed, let applied) in appendQueue[0..<count] {
                    patches.append(patch)
                    stored += storedOperations  // each step's operations apply after the last's
                    if let changed { projections = Self.merge(projections, changed) }
                    if let applied { actions.append((applied, patch.version)) }
                }
                PatchFrame.writeMerged(patches, from: first.from, to: last.version, into: &frame)
            }
            entry = LogEntry(kind: .patch, epoch: first.epoch, from: first.from, version: last.version, node: node.name, term: term,
                             frame: frame, projections: projections, stored: Self.storedOperations(stored), actions: actions)
        }
        let now = environment.runtime.clock.now
        inFlight = (entry, count, now, now)
        publish(entry)
    }

    /// A message's stored operations, or none. (Not `isEmpty ? nil : …`: JSON takes `nil` as a
    /// literal, so that ternary gives `.null`, which every replica then failed to apply.)
    private static func storedOperations(_ operations: [PatchOperation]) -> JSON? {
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

    private func publish(_ entry: LogEntry) {
        node.log.append(node.logSubject(name), entry.data, headers: entry.headers, messageID: entry.messageID(room: name),
                        expectedLastSubjectSequence: appendedSequence, timeout: .seconds(2)) { [self] result in
            queue.execute { self.appendFinished(result, entry: entry) }
        }
    }

    private func appendFinished(_ result: Result<UInt64, NATSError>, entry: LogEntry) {
        guard let current = inFlight, current.entry.isSameAppend(as: entry), ownership != nil else { return }
        switch result {
        case .success(let sequence):
            confirm(sequence)
        case .failure(.duplicate), .failure(.wrongLastSequence):
            // Something holds the place after our last entry: our own earlier try, stored after
            // all, or another owner's entry. The replica reads it and decides (`decide`).
            readLogToDecide(entry, since: environment.runtime.clock.now)
        case .failure(let error):
            guard environment.runtime.clock.now - current.firstTried < Self.appendGiveUp else {
                stepDown("its log did not take a version for \(Self.appendGiveUp) (\(error))", releaseLease: true, fenced: false)
                return
            }
            retry(after: .milliseconds(250)) { room in
                guard room.inFlight?.entry.messageID(room: room.name) == entry.messageID(room: room.name) else { return }
                room.publish(entry)
            }
        }
    }

    /// Reads the log after the replica's position until the entry after our last stored one
    /// decides the append in flight; tries again while the place is not readable yet.
    private func readLogToDecide(_ entry: LogEntry, since started: ContinuousClock.Instant) {
        node.log.read(stream: node.stream(name), subject: node.logSubject(name), from: lastSequence + 1, handler: { [self] stored in
            queue.execute { self.apply(stored.headers, stored.data, sequence: stored.sequence) }
        }, completion: { [self] _ in
            queue.execute {
                guard self.ownership != nil, self.inFlight?.entry.isSameAppend(as: entry) == true else { return }  // decided
                guard self.environment.runtime.clock.now - started < Self.appendGiveUp else {
                    return self.stepDown("its log's entry after version \(self.appendedVersion) could not be read", releaseLease: true, fenced: false)
                }
                self.retry(after: .milliseconds(250)) { $0.readLogToDecide(entry, since: started) }
            }
        })
    }

    /// The append in flight is in the log at `sequence`: its replies go out.
    private func confirm(_ sequence: UInt64) {
        guard let current = inFlight else { return }
        node.metrics.appendLatency.record(environment.runtime.clock.now - current.sent)
        appendedSequence = sequence
        appendedVersion = current.entry.version
        appendQueue.removeFirst(current.count)
        inFlight = nil
        let due = heldReplies.prefix { $0.version <= appendedVersion }
        heldReplies.removeFirst(due.count)
        for held in due { answer(held.outcome, to: held.target, storedAt: sequence) }
        sendAppend()
    }

    /// Session replies whose entry the replica has now applied.
    private func releaseStoredReplies() {
        guard let first = storedReplies.first, first.sequence <= lastSequence else { return }
        let due = storedReplies.prefix { $0.sequence <= lastSequence }
        storedReplies.removeFirst(due.count)
        output.deliver(due.map(\.delivery))
    }

    // MARK: Stopping

    private func finish() {
        guard phase != .stopped else { return }
        stepDown("the room left this node's memory", releaseLease: true, fenced: false)
        phase = .stopped
        giveUpUndecided()
        fanSubscription?.unsubscribe()
        fanSubscription = nil
        ownerSubscription?.unsubscribe()
        ownerSubscription = nil
        checkTimer?.cancel()
        presence?.stop()
        presenceTimer?.cancel()
        viewers?.stop()
        viewersTimer?.cancel()
        let failure = ActionOutcome.failed(Self.notApplied("room \(name) is closing on this node"))
        for (_, _, _, target) in waitingActions { reply(failure, to: target, afterVersion: 0) }
        waitingActions.removeAll()
        stopped.leave()
    }

    private func retry(after delay: Duration, _ work: @escaping @Sendable (ClusteredRoom) -> Void) {
        let timer = TimerBox()
        timer.timer = environment.runtime.clock.startTimer(every: delay) { [self] in
            timer.timer?.cancel()
            queue.execute { work(self) }
        }
    }
}

/// Holds a one-shot timer so its tick can cancel it.
private final class TimerBox: @unchecked Sendable {
    var timer: (any ServerTimer)?
}

/// The log of the owner's `Room`: the room's fenced stream. Its steps are appended there (and
/// a new epoch's snapshot first), its replies wait for them; a room taken over continues from
/// the replica's state.
private struct OwnerLog: RoomLog {
    let room: ClusteredRoom
    let term: String
    let restored: StoredRoom?

    func restore() -> StoredRoom? { restored }

    func startEpoch(_ epoch: String, version: Int, state: RoomState, lastChange: Int) {
        let frame = ServerMessage.snapshot(room: room.name, epoch: epoch, version: version, state: state.published).encoded()
        hand(.epochStart(epoch: epoch, version: version, frame: frame, stored: state.stored))
    }

    func append(_ step: PatchFrame, stored: [PatchOperation], projections: JSON?, applied: ActionNumber?, lastChange: Int,
                state: () -> RoomState) {
        hand(.patch(step, stored: stored, projections: projections, applied: applied))
    }

    private func hand(_ append: ClusteredRoom.Append) {
        let room = self.room, term = self.term
        room.queue.execute { room.ownerAppended(append, term: term) }
    }

    func release(_ deliveries: [RoomDelivery]) {
        let room = self.room, term = self.term
        room.queue.execute { room.ownerReleased(deliveries, term: term) }
    }

    // The log keeps the room: nothing to store when the owner's `Room` stops, or to forget here.
    func close(epoch: String, version: Int, state: RoomState, lastChange: Int) {}
    func delete() {}
}
