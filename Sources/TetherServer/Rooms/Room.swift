import Dispatch
import Logging
import TetherJSON
import TetherProtocol
import TetherState
import TetherTransport

/// One live ViewModel instance, its version history and its subscribers.
///
/// A room runs on its own serial executor: the ViewModel's actions and timers, the patch
/// encoding and the subscriber list all live there. Everything it produces leaves through its
/// `RoomOutput`, in order, so rooms never block each other or the sockets. Work for a room is
/// given to `execute`, which keeps each client's requests in order.
actor Room: RoomEndpoint {
    nonisolated let name: String
    nonisolated let kind: ViewModelKind
    private nonisolated let executor: any RoomExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private let host: ViewModelHost
    private let output: any RoomOutput
    /// Where a shared room persists its versions; nil for per-session rooms or in memory only.
    private let store: RoomStore?
    private let environment: RoomEnvironment
    private(set) var epoch: String
    private(set) var version = 0
    /// `epoch` and `version` for the system room's list, readable from any thread.
    nonisolated let published: RoomVersionCell
    private var history: PatchHistory
    private var subscribers = SubscriberList()
    private var snapshots = SnapshotCache()
    /// Who each subscriber is and what they see beyond the shared document, when the ViewModel
    /// publishes values per viewer; nil otherwise (then every subscriber gets the same frames).
    private var viewerViews: ViewerViews?
    /// On a cluster's owner, when the ViewModel publishes values per viewer: the viewers of every
    /// node's sessions and what each node holds of their projections (Cluster/ClusterViewers.swift).
    private var clusterProjections: ClusterProjections?
    /// Who is here, for kinds that keep presence (Presence/RoomPresence.swift).
    private var presence: RoomPresence?
    private var timers: [any ServerTimer] = []
    private var refusedTicks = 0
    /// Left once `stop()` has run: a new room of the same name waits for it before loading, so it
    /// sees every version this one committed.
    nonisolated let stopped = DispatchGroup()
    private var isStopped = false

    /// Where a restored room starts (a cluster node taking a room over); nil loads from the store.
    private let restoring: RestoredRoom?

    init(name: String, kind: ViewModelKind, environment: RoomEnvironment, output: any RoomOutput, restoring: RestoredRoom? = nil) {
        self.restoring = restoring
        self.name = name
        self.kind = kind
        self.executor = environment.runtime.makeRoomExecutor(name)
        self.host = kind.instantiate(room: name)
        self.viewerViews = host.hasPerViewerValues ? ViewerViews() : nil
        self.environment = environment
        // The server's own rooms describe the running daemon, and a cluster keeps its rooms in
        // its log: nothing of theirs goes to the store.
        let store = kind.scope == .shared && restoring == nil && !SystemRoom.isSystemKind(kind.name) ? environment.store : nil
        self.store = store
        if let store, store.durability != .none {
            self.output = CommittedOutput(store: store, next: output)
        } else {
            self.output = output
        }
        let epoch = RandomID.make(length: 10)
        self.epoch = epoch
        self.published = RoomVersionCell(epoch: epoch)
        self.presence = kind.hasPresence ? RoomPresence(room: name, maxMembers: environment.configuration.maxPresenceMembers,
                                                        window: environment.configuration.presenceWindow, clock: environment.runtime.clock) : nil
        self.history = PatchHistory(maxPatches: environment.configuration.historyMaxPatches,
                                    maxBytes: environment.configuration.historyMaxBytes)
        stopped.enter()
    }

    /// Runs `work` on the room's executor after everything given to it before.
    nonisolated func execute(_ work: @escaping @Sendable (isolated Room) -> Void) {
        executor.execute { self.assumeIsolated(work) }
    }

    private var logger: Logger { environment.logger }
    private var metrics: ServerMetrics { environment.metrics }

    // MARK: Endpoint (any thread)

    nonisolated func start(after predecessor: (any RoomEndpoint)?) {
        execute { $0.begin(after: predecessor) }
    }

    nonisolated func join(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence: PresenceJoin?) {
        execute { $0.subscribe(session, since: since, id: id, presence: presence) }
    }

    nonisolated func updatePresence(_ session: SessionHandle, data: JSON, id: Int?) {
        execute { $0.changePresence(session, data: data, id: id) }
    }

    nonisolated func leave(_ session: SessionHandle) {
        execute { $0.unsubscribe(session) }
    }

    nonisolated func resync(_ session: SessionHandle) {
        execute { $0.resend(to: session) }
    }

    nonisolated func perform(_ action: String, args: JSON?, id: Int, from session: SessionHandle) {
        perform(action, args: args, replyTo: .session(session, id: id, room: name))
    }

    nonisolated func perform(_ action: String, args: JSON?, replyTo target: ActionReplyTarget) {
        execute { $0.act(action, args: args, replyTo: target) }
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

    /// Hands `receive` the room's epoch, version and snapshot frame, on the room's executor,
    /// after everything given to it before.
    nonisolated func readSnapshot(_ receive: @escaping @Sendable (_ epoch: String, _ version: Int, _ frame: [UInt8]) -> Void) {
        execute { room in
            receive(room.epoch, room.version, ServerMessage.snapshot(room: room.name, epoch: room.epoch, version: room.version, state: room.host.state).encoded())
        }
    }

    // MARK: Lifecycle

    private func begin(after predecessor: (any RoomEndpoint)?) {
        predecessor?.waitUntilStopped()
        published.lastChange = now
        if let restoring {
            epoch = restoring.epoch
            version = restoring.version
            published.epoch = epoch
            published.version = version
            do { try host.restore(from: restoring.state) } catch {
                logger.error("room \(name): the state to continue from does not restore (\(error))")
            }
            for patch in restoring.patches { history.append(patch) }
        } else if let store {
            restore(from: store)
        }
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
        store?.commit(RoomStore.Commit(room: name, kind: kind.name, epoch: epoch, patch: nil, version: version,
                                       state: host.state.encoded(), lastChange: published.lastChange))
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
        store?.delete(room: name)
    }

    private func halt() {
        isStopped = true
        for timer in timers { timer.cancel() }
        timers.removeAll()
        presence?.stop()
    }

    /// Wall-clock seconds since 1970: when a version step was made.
    private var now: Int { environment.runtime.clock.secondsSince1970 }

    /// Continues the stored history (same epoch and version), or records a new one.
    private func restore(from store: RoomStore) {
        do {
            if let stored = try store.load(room: name) {
                try host.restore(from: stored.state)
                epoch = stored.epoch
                version = stored.version
                published.epoch = epoch
                published.version = version
                published.lastChange = stored.lastChange
                for patch in stored.patches { history.append(patch) }
                logger.debug("room \(name) restored at version \(version) of epoch \(epoch)")
                return
            }
        } catch {
            logger.error("room \(name): cannot restore its stored state (\(error)); starting a new epoch")
        }
        var commit = RoomStore.Commit(room: name, kind: kind.name, epoch: epoch, patch: nil, version: version,
                                      state: host.state.encoded(), lastChange: published.lastChange)
        commit.startsEpoch = true
        store.commit(commit)
    }

    private func tick(_ index: Int) {
        guard !isStopped else { return }
        host.timers[index].tick()
        do {
            let deliveries = versionStep(try host.finishTurn(maxEncodedSize: environment.configuration.maxStateBytes))
            if !deliveries.isEmpty { output.deliver(deliveries) }
            refusedTicks = 0
        } catch {
            // Per-viewer values may read state the turn did not take back.
            let deliveries = versionStep([])
            if !deliveries.isEmpty { output.deliver(deliveries) }
            refusedTicks += 1
            // Once, then every 60th: a timer that keeps growing the state must not flood the log.
            if refusedTicks % 60 == 1 { logger.warning("room \(name): a timer tick was taken back: \(error) (\(refusedTicks) so far)") }
        }
    }

    // MARK: Subscribers

    /// Subscribes `session`: first a snapshot, or, when `since` names a version of this epoch
    /// still in the history, the patches after it (an empty patch when nothing changed). With
    /// `presence` (in a room that keeps it), the session is listed and a presence snapshot
    /// follows. With an `id`, an ack at the room's version comes last.
    private func subscribe(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence join: PresenceJoin?) {
        subscribers.add(session)
        viewerViews?.add(session) { host.projection(for: $0) }
        var deliveries = history.firstMessages(for: session, since: since, room: name, epoch: epoch, version: version,
                                               patchesServe: viewerViews == nil, metrics: metrics) { snapshot(for: session) }
        deliveries += presenceOnJoin(session, join)
        if let id { deliveries.append(.message(.control(ServerMessage.ack(id: id, room: name, version: version).encoded()), to: session)) }
        output.deliver(deliveries)
    }

    private func unsubscribe(_ session: SessionHandle) {
        guard subscribers.remove(session) else { return }
        viewerViews?.remove(session)
        if let left = presence?.remove(session) {
            host.presenceLeft(memberID: left)
            output.deliver(presenceChanged() + modelReaction())
        }
    }

    // MARK: Presence

    /// A join's presence: lists the session, or makes it a spectator (a rejoin without presence
    /// unlists it), and gives it a snapshot that includes the change. Nothing in rooms without
    /// presence; once the room lists its maximum of members, a join with presence is a plain join.
    private func presenceOnJoin(_ session: SessionHandle, _ join: PresenceJoin?) -> [RoomDelivery] {
        guard presence != nil else { return [] }
        let (listed, left) = presence!.join(session, join)
        if let left { host.presenceLeft(memberID: left) }
        if let listed { host.presenceChanged(listed) }
        var deliveries: [RoomDelivery] = []
        if presence!.isListening(session) { deliveries.append(.message(.control(presence!.snapshot(for: session)), to: session)) }
        if listed != nil || left != nil { deliveries += presenceChanged() + modelReaction() }
        return deliveries
    }

    /// A presence update: every listener (the sender too) gets the change, then the sender its
    /// ack (which, with a window, comes first: the change goes out when the window ends).
    private func changePresence(_ session: SessionHandle, data: JSON, id: Int?) {
        guard presence?.isListed(session) == true else {
            let reason = presence == nil ? "room \(name) keeps no presence" : "join \(name) with presence before updating it"
            output.deliver([.message(.control(ServerMessage.error(ProtocolError(.invalidArgs, reason, id: id, room: name)).encoded()), to: session)])
            return
        }
        var deliveries: [RoomDelivery] = []
        if presence!.update(session, data: data) {
            host.presenceChanged(presence!.member(of: session)!)
            deliveries += presenceChanged() + modelReaction()
        }
        if let id { deliveries.append(.message(.control(ServerMessage.ack(id: id, room: name, version: nil).encoded()), to: session)) }
        output.deliver(deliveries)
    }

    /// After a presence change: the frames to send now, or none while a window gathers changes.
    private func presenceChanged() -> [RoomDelivery] {
        published.members = presence!.members.count
        return presence!.deliveriesAfterChange { self.execute { $0.presenceWindowEnded() } }
    }

    private func presenceWindowEnded() {
        guard !isStopped else { return }
        let deliveries = presence!.flush()
        if !deliveries.isEmpty { output.deliver(deliveries) }
    }

    /// What the ViewModel changed in reaction to presence: one version step like an action's.
    private func modelReaction() -> [RoomDelivery] {
        do {
            return versionStep(try host.finishTurn(maxEncodedSize: environment.configuration.maxStateBytes))
        } catch {
            logger.warning("room \(name): a reaction to presence was taken back: \(error)")
            return versionStep([])
        }
    }

    var subscriberCount: Int { subscribers.count }

    private func resend(to session: SessionHandle) {
        guard subscribers.contains(session) else { return }
        output.deliver([snapshot(for: session)])
    }

    private func snapshot(for session: SessionHandle) -> RoomDelivery {
        let projection = viewerViews?.projection(of: session) ?? [:]
        let message = snapshots.message(room: name, version: version, projection: projection,
                                        compressAbove: environment.configuration.compressionThreshold) {
            let state = projection.isEmpty ? host.state : Projection.document(shared: host.state, projection: projection)
            return ServerMessage.snapshot(room: name, epoch: epoch, version: version, state: state).encoded()
        }
        return .message(message, to: session)
    }

    // MARK: A cluster's owner

    /// The viewers of a cluster node's sessions changed (this room runs on the room's owner, for
    /// a `ClusteredRoom`): a new viewer's projection goes out in a version step of its own.
    nonisolated func clusterViewersChanged(node: String, set: [AnnouncedViewer], removed: [String]) {
        execute { $0.changeClusterViewers(node: node, set: set, removed: removed) }
    }

    private func changeClusterViewers(node: String, set: [AnnouncedViewer], removed: [String]) {
        guard viewerViews != nil, !isStopped else { return }
        if clusterProjections == nil { clusterProjections = ClusterProjections() }
        guard let changed = clusterProjections!.change(node: node, set: set, removed: removed, { host.projection(for: $0) }) else { return }
        // Only those viewers' values changed: an empty step for everyone, their projections for the log.
        let shared = commitTurn([], evenIfEmpty: true)!
        output.deliver([.patch(shared, to: subscribers.all), .projections(changed, version: shared.version)])
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
        let deliveries = modelReaction()
        if !deliveries.isEmpty { output.deliver(deliveries) }
    }

    // MARK: Actions

    /// Runs an action: its changes become one patch for every subscriber, then the sender gets
    /// its outcome with that version; or, when it fails, the turn is taken back and the sender
    /// gets an error that says nothing was applied.
    private func act(_ action: String, args: JSON?, replyTo target: ActionReplyTarget) {
        guard !isStopped else {
            output.deliver([.reply(.failed(ProtocolError(.unavailable, "room \(name) is moving; try again")), to: target)])
            return
        }
        var failure: ProtocolError?
        do {
            try host.perform(action, args: args, viewer: target.viewer)
        } catch let error as ActionError {
            switch error {
            case .unknownAction: failure = ProtocolError(.unknownAction, error.description)
            case .invalidArgs: failure = ProtocolError(.invalidArgs, error.description)
            case .tooLarge: failure = ProtocolError(.tooLarge, error.description)
            }
        } catch {
            logger.error("action \(action) in room \(name) failed: \(error)")
            failure = ProtocolError(.internal, "the action failed on the server")
        }
        var deliveries: [RoomDelivery]
        if failure != nil { host.takeBackTurn() }
        do {
            deliveries = versionStep(try host.finishTurn(maxEncodedSize: environment.configuration.maxStateBytes))
        } catch {
            deliveries = versionStep([])
            failure = ProtocolError(.tooLarge, error.description)
            logger.notice("room \(name): action \(action) refused: \(error.description)")
        }
        metrics.action(outcome: failure?.code.rawValue ?? "ok")
        deliveries.append(.reply(failure.map(ActionOutcome.failed) ?? .applied(version: version), to: target))
        output.deliver(deliveries)
    }

    /// Makes a turn one version step, if it changed the shared document or what a subscribed
    /// viewer sees, and returns what each subscriber gets of it.
    private func versionStep(_ operations: [PatchOperation]) -> [RoomDelivery] {
        guard viewerViews != nil else {
            return commitTurn(operations).map { [.patch($0, to: subscribers.all)] } ?? []
        }
        // In place (`!`): a copy would copy every viewer's entry once per turn.
        let changes = viewerViews!.update { host.projection(for: $0) }
        let nodeChanges = clusterProjections?.update { host.projection(for: $0) }
        guard !operations.isEmpty || !changes.isEmpty || nodeChanges != nil else { return [] }
        let shared = commitTurn(operations, evenIfEmpty: true)!
        var deliveries = viewerViews!.deliveries(of: shared, changes: changes, to: subscribers.all,
                                                 compressAbove: environment.configuration.compressionThreshold)
        if let nodeChanges { deliveries.append(.projections(nodeChanges, version: shared.version)) }
        return deliveries
    }

    /// Makes the turn's operations one version step (an empty one only when a viewer's own
    /// values changed: the version counts for everyone).
    private func commitTurn(_ operations: [PatchOperation], evenIfEmpty: Bool = false) -> PatchFrame? {
        guard !operations.isEmpty || evenIfEmpty else { return nil }
        let patch = PatchFrame(room: name, epoch: epoch, from: version, version: version + 1, operations: operations,
                               compressAbove: environment.configuration.compressionThreshold)
        version += 1
        published.version = version
        published.lastChange = now
        published.stateBytes = host.context.documentSizeEstimate
        history.append(patch)
        metrics.patchProduced()
        if let store {
            let snapshotDue = version % RoomStore.snapshotInterval == 0
            store.commit(RoomStore.Commit(room: name, kind: kind.name, epoch: epoch, patch: patch, version: version,
                                          state: snapshotDue ? host.state.encoded() : nil, lastChange: published.lastChange))
        }
        return patch
    }

    /// The current state, for tests and tools.
    var state: JSON { host.state }
}

/// A room's history to continue from: its epoch, version, state and recent patches.
struct RestoredRoom: Sendable {
    var epoch: String
    var version: Int
    var state: JSON
    var patches: [PatchFrame] = []
}

/// What every room shares: settings, runtime, storage and observability.
struct RoomEnvironment: Sendable {
    let configuration: ServerConfiguration
    let runtime: ServerRuntime
    var store: RoomStore?
    let metrics: ServerMetrics
    let logger: Logger
}
