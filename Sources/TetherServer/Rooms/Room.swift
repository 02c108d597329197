import Foundation
import Dispatch
import Logging
import TetherJSON
import TetherProtocol
import TetherState
import TetherTransport

/// A room's owner: one live ViewModel instance, which runs the turns and makes each one version
/// step (the shared frame encoded once, compressed once past the threshold, per-viewer
/// projections beside it).
///
/// Each step goes to the room's log (`RoomLog`: memory and SQLite on one node, the fenced
/// stream on a cluster), and the room's followers on this node (`RoomFollowers`) fan it out;
/// everything leaves through the log's `release`, so nothing is sent before its step is
/// durable. A cluster's owner has no followers of its own: each node's `ClusteredRoom` follows
/// the log. A room runs on its own serial executor, so rooms never block each other or the
/// sockets; work for it is given to `execute`, which keeps each client's requests in order.
actor Room: RoomFront {
    nonisolated let name: String
    nonisolated let kind: ViewModelKind
    private nonisolated let executor: any RoomExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private let host: ViewModelHost
    private let log: any RoomLog
    private let environment: RoomEnvironment
    var followers: RoomFollowers
    /// `epoch` and `version` for the system room's list, readable from any thread.
    nonisolated let published: RoomVersionCell
    var epoch: String { followers.epoch }
    var version: Int { followers.version }
    /// On a cluster's owner, when the ViewModel publishes values per viewer: the viewers of every
    /// node's sessions and what each node holds of their projections (Cluster/ClusterViewers.swift).
    private var clusterProjections: ClusterProjections?
    /// The outcomes of recent numbered actions, per client: each number runs once.
    private var outcomes = ActionOutcomes()
    /// Restored from a log that holds no stored state (written before ViewModels stored any):
    /// the next stored operations would have nothing to apply to there, so the first turn that
    /// changes stored state logs all of it (`replace ""`).
    private var storedStateUnlogged = false
    private var timers: [any ServerTimer] = []
    private var refusedTicks = 0
    /// Left once `stop()` has run: a new room of the same name waits for it before loading, so it
    /// sees every version this one committed.
    nonisolated let stopped = DispatchGroup()
    private var isStopped = false
    /// Presence changes heard since the last step (`hear`), their encoded bytes, and how many
    /// were dropped past `StepProvenance.maxHeardBytes`.
    private var heardPresence: [JSON] = []
    private var heardBytes = 0
    private var heardDropped = 0

    init(name: String, kind: ViewModelKind, environment: RoomEnvironment, log: any RoomLog) {
        self.name = name
        self.kind = kind
        self.executor = environment.runtime.makeRoomExecutor(name)
        self.host = kind.instantiate(room: name)
        host.setClock { [clock = environment.runtime.clock] in clock.millisecondsSince1970 }
        self.environment = environment
        self.log = log
        let presence = kind.hasPresence ? RoomPresence(room: name, maxMembers: environment.configuration.maxPresenceMembers,
                                                       window: environment.configuration.presenceWindow, clock: environment.runtime.clock) : nil
        self.followers = RoomFollowers(room: name, epoch: RandomID.make(length: 10), perViewer: host.hasPerViewerValues, presence: presence,
                                       configuration: environment.configuration, metrics: environment.metrics)
        self.published = followers.published
        stopped.enter()
    }

    /// Runs `work` on the room's executor after everything given to it before.
    nonisolated func execute(_ work: @escaping @Sendable (isolated Room) -> Void) {
        executor.execute { self.assumeIsolated(work) }
    }

    nonisolated var webhookRecorder: WebhookRecorder? { environment.webhooks }
    private var logger: Logger { environment.logger }
    private var metrics: ServerMetrics { environment.metrics }

    // MARK: Endpoint (any thread)

    nonisolated func start(after predecessor: (any RoomEndpoint)?) {
        execute { $0.begin(after: predecessor) }
    }

    nonisolated func join(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence: PresenceJoin?) {
        execute { $0.frontJoin(session, since: since, id: id, presence: presence) }
    }

    nonisolated func leave(_ session: SessionHandle) {
        execute { $0.frontLeave(session) }
    }

    nonisolated func perform(_ action: String, args: JSON?, id: Int, number: ActionNumber?, from session: SessionHandle) {
        perform(action, args: args, number: number, replyTo: .session(session, id: id, room: name, received: environment.runtime.clock.now))
    }

    nonisolated func perform(_ action: String, args: JSON?, number: ActionNumber? = nil, replyTo target: ActionReplyTarget) {
        execute { $0.act(action, args: args, number: number, replyTo: target) }
    }

    nonisolated func stop() {
        execute { $0.finish() }
    }

    nonisolated func waitUntilStopped() {
        stopped.wait()
    }

    func stopAndWait() async {
        finish()
    }

    // MARK: Lifecycle

    private func begin(after predecessor: (any RoomEndpoint)?) {
        predecessor?.waitUntilStopped()
        published.lastChange = now
        restore()
        published.stateBytes = host.context.documentSizeEstimate
        for (index, timer) in host.timers.enumerated() {
            // The timer keeps the room alive until `finish()` cancels it.
            timers.append(environment.runtime.clock.startTimer(every: timer.interval) {
                self.execute { room in room.tick(index) }
            })
        }
        // A room that wakes (restored, or taken over on a cluster) ticks each timer once before
        // it serves anyone: a stored clock must not show the time it was stored at.
        for index in host.timers.indices { tick(index) }
    }

    private func finish() {
        guard !isStopped else { return }
        halt()
        log.close(epoch: epoch, version: version, state: roomState, lastChange: published.lastChange)
        stopped.leave()
    }

    /// Leaves memory and storage: nothing more is committed, and the store forgets the room
    /// after the commits this room submitted before. The hub has already told its subscribers.
    nonisolated func delete() {
        execute { $0.remove() }
    }

    private func remove() {
        if !isStopped {
            halt()
            stopped.leave()
        }
        log.delete()
    }

    private func halt() {
        isStopped = true
        for timer in timers { timer.cancel() }
        timers.removeAll()
        followers.stopPresence()
    }

    /// Wall-clock seconds since 1970: when a version step was made.
    private var now: Int { environment.runtime.clock.secondsSince1970 }

    /// Continues the log's history (same epoch and version), or starts a new epoch in it.
    private func restore() {
        do {
            if let stored = try log.restore() {
                try host.restore(from: stored.state, stored: stored.stored)
                storedStateUnlogged = stored.stored == nil
                followers.restart(epoch: stored.epoch, version: stored.version, patches: stored.patches)
                outcomes.restore(applied: stored.actions)
                if stored.lastChange > 0 { published.lastChange = stored.lastChange }
                logger.debug("room \(name) restored at version \(version) of epoch \(epoch)")
                return
            }
        } catch {
            logger.error("room \(name): cannot restore its state (\(error)); starting a new epoch")
        }
        log.startEpoch(epoch, version: version, state: roomState, lastChange: published.lastChange)
        // Nothing was stored: a new room (the server's own and per-session ones are not rooms of the system's).
        if kind.scope == .shared, !SystemRoom.isSystemKind(kind.name) {
            environment.webhooks?.record(.roomCreated, room: name) { _ in
                WebhookEvent.roomCreated(room: name, kind: kind.name, epoch: epoch, at: Date().timeIntervalSince1970)
            }
        }
    }

    private func tick(_ index: Int) {
        guard !isStopped else { return }
        host.timers[index].tick()
        let provenance = StepProvenance(cause: .timer(index), at: now)
        do {
            let deliveries = versionStep(try host.finishTurn(maxEncodedSize: environment.configuration.maxStateBytes), provenance: provenance)
            if !deliveries.isEmpty { log.release(deliveries) }
            refusedTicks = 0
        } catch {
            // Per-viewer values may read state the turn did not take back.
            let deliveries = versionStep([], provenance: provenance)
            if !deliveries.isEmpty { log.release(deliveries) }
            refusedTicks += 1
            // Once, then every 60th: a timer that keeps growing the state must not flood the log.
            if refusedTicks % 60 == 1 { logger.warning("room \(name): a timer tick was taken back: \(error) (\(refusedTicks) so far)") }
        }
    }

    // MARK: Subscribers (the room front: Rooms/RoomFront.swift)

    var isServing: Bool { !isStopped }
    func frontDocument() -> JSON { host.state }
    func frontProjection(for viewer: Viewer) -> [String: JSON] { host.projection(for: viewer) }
    func viewersChanged(came: Viewer?, left: Viewer?) {}
    /// Everything leaves through the log: after the steps before it are durable.
    func emit(_ deliveries: [RoomDelivery]) { log.release(deliveries) }

    /// Members listed or unlisted here: the ViewModel reacts (its `context.presence`), as a
    /// version step.
    func membersChanged(_ outcome: RoomFollowers.PresenceOutcome) -> [RoomDelivery] {
        if let left = outcome.left { host.presenceLeft(memberID: left) }
        if let listed = outcome.listed { host.presenceChanged(listed) }
        hear(listed: outcome.listed.map { [$0] } ?? [], left: outcome.left.map { [$0] } ?? [])
        return modelReaction()
    }

    /// Presence changes go into the next step's history where the kind keeps arguments (a
    /// replay gives them to the ViewModel in the same order).
    private func hear(listed: [PresenceMember], left: [String]) {
        guard kind.historyArguments else { return }
        let changes: [JSON] = left.map { ["left": .string($0)] }
            + listed.map { ["listed": ["id": .string($0.id), "user": .string($0.user), "data": $0.data]] }
        for change in changes {
            let bytes = change.encoded().count
            guard heardDropped == 0, heardBytes + bytes <= StepProvenance.maxHeardBytes else {
                heardDropped += 1
                continue
            }
            heardPresence.append(change)
            heardBytes += bytes
        }
    }

    /// What the ViewModel changed in reaction to presence: one version step like an action's.
    private func modelReaction() -> [RoomDelivery] {
        let provenance = StepProvenance(cause: .presence, at: now)
        do {
            return versionStep(try host.finishTurn(maxEncodedSize: environment.configuration.maxStateBytes), provenance: provenance)
        } catch {
            logger.warning("room \(name): a reaction to presence was taken back: \(error)")
            return versionStep([], provenance: provenance)
        }
    }

    var subscriberCount: Int { followers.subscribers.count }

    // MARK: A cluster's owner

    /// The viewers of a cluster node's sessions changed (this room runs on the room's owner, for
    /// a `ClusteredRoom`): a new viewer's projection goes out in a version step of its own.
    nonisolated func clusterViewersChanged(node: String, set: [AnnouncedViewer], removed: [String]) {
        execute { $0.changeClusterViewers(node: node, set: set, removed: removed) }
    }

    private func changeClusterViewers(node: String, set: [AnnouncedViewer], removed: [String]) {
        guard host.hasPerViewerValues, !isStopped else { return }
        if clusterProjections == nil { clusterProjections = ClusterProjections() }
        guard let changed = clusterProjections!.change(node: node, set: set, removed: removed, { host.projection(for: $0) }) else { return }
        // Only those viewers' values changed: an empty step for everyone, their projections for the log.
        log.release(commitTurn([], projections: changed, provenance: StepProvenance(cause: .viewers, at: now), evenIfEmpty: true))
    }

    /// Members of the room on any cluster node joined, changed or left (this room runs on the
    /// room's owner, which lists no members of its own): the ViewModel's reaction is a turn.
    nonisolated func clusterPresenceChanged(listed: [PresenceMember], left: [String]) {
        execute { $0.changeClusterPresence(listed: listed, left: left) }
    }

    private func changeClusterPresence(listed: [PresenceMember], left: [String]) {
        guard !isStopped else { return }
        for id in left { host.presenceLeft(memberID: id) }
        for member in listed { host.presenceChanged(member) }
        hear(listed: listed, left: left)
        let deliveries = modelReaction()
        if !deliveries.isEmpty { log.release(deliveries) }
    }

    // MARK: Actions

    /// Runs an action: its changes become one patch for every subscriber, then the sender gets
    /// its outcome with that version; or, when it fails, the turn is taken back and the sender
    /// gets an error that says nothing was applied. A numbered action runs once: a repeat gets
    /// the first outcome (released after the step that applied it is durable).
    private func act(_ action: String, args: JSON?, number: ActionNumber?, replyTo target: ActionReplyTarget) {
        guard !isStopped else {
            log.release([.reply(.failed(ProtocolError(.unavailable, "room \(name) is moving; try again")), to: target)])
            return
        }
        if let number {
            switch outcomes.lookup(number) {
            case .new: break
            case .repeated(let outcome):
                metrics.action(outcome: "repeat")
                return log.release([.reply(outcome, to: target)])
            case .forgotten(let oldest):
                metrics.action(outcome: ErrorCode.staleAction.rawValue)
                return log.release([.reply(.failed(ActionOutcomes.forgottenError(number, oldest: oldest)), to: target)])
            }
        }
        var failure: ProtocolError?
        do {
            try host.perform(action, args: args, viewer: target.viewer)
        } catch let error as ActionError {
            switch error {
            case .unknownAction: failure = ProtocolError(.unknownAction, error.description)
            case .invalidArgs: failure = ProtocolError(.invalidArgs, error.description)
            case .tooLarge: failure = ProtocolError(.tooLarge, error.description)
            case .refused(let reason, let code, let message):
                failure = ProtocolError(code == .tooLarge ? .tooLarge : .invalidArgs, message, reason: reason)
            }
        } catch {
            logger.error("action \(action) in room \(name) failed: \(error)")
            failure = ProtocolError(.internal, "the action failed on the server")
        }
        var deliveries: [RoomDelivery]
        if failure != nil { host.takeBackTurn() }
        var provenance = StepProvenance(cause: failure == nil ? .action(action) : .refusedAction(action), viewer: target.viewer.id,
                                        number: number, args: args, keepsArgs: kind.historyArguments, at: now)
        do {
            deliveries = versionStep(try host.finishTurn(maxEncodedSize: environment.configuration.maxStateBytes),
                                     applying: failure == nil ? number : nil, provenance: provenance)
        } catch {
            provenance.cause = .refusedAction(action)
            deliveries = versionStep([], provenance: provenance)
            failure = ProtocolError(.tooLarge, error.description)
            logger.notice("room \(name): action \(action) refused: \(error.description)")
        }
        metrics.action(outcome: failure?.code.rawValue ?? "ok")
        let outcome = failure.map(ActionOutcome.failed) ?? .applied(version: version)
        if let number { outcomes.record(number, outcome) }
        deliveries.append(.reply(outcome, to: target))
        log.release(deliveries)
    }

    /// Makes a turn one version step, if it changed the shared document or what a subscribed
    /// viewer sees, and returns what each subscriber gets of it.
    /// `applying`: the numbered action the step applies, stored with it. A turn that changed
    /// only the ViewModel's stored state is a step too (an empty patch for clients): what an
    /// ack confirms must be in the log.
    private func versionStep(_ operations: [PatchOperation], applying number: ActionNumber? = nil, provenance: StepProvenance) -> [RoomDelivery] {
        var provenance = provenance
        provenance.inputs = host.lastTurnInputs
        var stored = host.takeStoredChanges()
        if storedStateUnlogged, !stored.isEmpty {
            stored = [.replace(path: .root, value: host.storedState)]
            storedStateUnlogged = false
        }
        guard host.hasPerViewerValues else {
            return commitTurn(operations, stored: stored, applying: number, provenance: provenance, evenIfEmpty: !stored.isEmpty)
        }
        let changes = followers.updateViews { host.projection(for: $0) }
        let nodeChanges = clusterProjections?.update { host.projection(for: $0) }
        guard !operations.isEmpty || !stored.isEmpty || !changes.isEmpty || nodeChanges != nil else { return [] }
        return commitTurn(operations, stored: stored, changes: changes, projections: nodeChanges, applying: number, provenance: provenance,
                          evenIfEmpty: true)
    }

    /// Makes the turn's operations one version step (an empty one only when a viewer's own
    /// values or the stored state changed: the version counts for everyone), appends it to the
    /// log and returns what each follower here gets of it.
    private func commitTurn(_ operations: [PatchOperation], stored: [PatchOperation] = [], changes: [Viewer: [PatchOperation]] = [:],
                            projections: JSON? = nil, applying number: ActionNumber? = nil, provenance: StepProvenance,
                            evenIfEmpty: Bool = false) -> [RoomDelivery] {
        guard !operations.isEmpty || evenIfEmpty else { return [] }
        var provenance = provenance
        provenance.heard = heardPresence
        provenance.heardDropped = heardDropped
        (heardPresence, heardBytes, heardDropped) = ([], 0, 0)
        let patch = PatchFrame(room: name, epoch: epoch, from: version, version: version + 1, operations: operations,
                               compressAbove: environment.configuration.compressionThreshold)
        published.lastChange = now
        published.stateBytes = host.context.documentSizeEstimate
        metrics.patchProduced()
        var webhooks: [WebhookDelivery] = []
        if case .action(let action) = provenance.cause {
            webhooks = environment.webhooks?.deliveries(.actionApplied, room: name) { withArguments in
                WebhookEvent.actionApplied(room: name, kind: kind.name, epoch: epoch, version: patch.version, action: action,
                                           viewer: provenance.viewer ?? "", arguments: withArguments && kind.webhookArguments ? provenance.args : nil,
                                           at: Date().timeIntervalSince1970)
            } ?? []
        }
        log.append(patch, stored: stored, projections: projections, applied: number, lastChange: published.lastChange,
                   webhooks: webhooks, provenance: provenance, state: { roomState })
        if !webhooks.isEmpty { environment.webhooks?.recorded() }
        return followers.follow(patch, changes: changes)
    }

    /// The current state, for tests and tools.
    var state: JSON { host.state }

    /// The published and the stored state, for the log.
    private var roomState: RoomState { RoomState(published: host.state, stored: host.storedState) }
}

/// What every room shares: settings, runtime, storage and observability.
struct RoomEnvironment: Sendable {
    let configuration: ServerConfiguration
    let runtime: ServerRuntime
    var store: RoomStore?
    let metrics: ServerMetrics
    let logger: Logger
    /// Where the rooms' events go out as webhooks (nil: none configured).
    var webhooks: WebhookRecorder? = nil
}
