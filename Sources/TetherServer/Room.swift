import Dispatch
import Logging
import TetherProtocol
import TetherJSON
import TetherState

/// One live ViewModel instance, its version history and its subscribers.
///
/// A room runs on its own serial executor: the ViewModel's actions and timers, the patch
/// encoding and the subscriber list all live there. It talks to the socket thread only by
/// posting work to the hub, so rooms never block each other or the sockets. Work for a room is
/// posted with `enqueue`, which keeps each client's requests in order.
actor Room {
    nonisolated let name: String
    nonisolated let kind: ViewModelKind
    private nonisolated let executor: QueueExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private let host: ViewModelHost
    private let hub: SessionHub
    /// Where a shared room persists its versions; nil for per-session rooms or in memory only.
    private let store: RoomStore?
    private let metrics: ServerMetrics
    private let logger: Logger
    private(set) var epoch: String
    private(set) var version = 0
    private var history: PatchHistory
    private var subscribers: Set<SessionHandle> = []
    /// The subscribers as an array, rebuilt only when they change, so a broadcast shares it.
    private var subscriberList: [SessionHandle] = []
    /// The last snapshot frame and its version: many joins at one version encode it once.
    private var snapshotCache: (version: Int, frame: [UInt8])?
    private var timers: [any DispatchSourceTimer] = []
    private let maxStateBytes: Int
    private var refusedTicks = 0
    /// Left once `stop()` has run: a new room of the same name waits for it before loading, so it
    /// sees every version this one committed.
    nonisolated let stopped = DispatchGroup()
    private var isStopped = false

    init(name: String, kind: ViewModelKind, configuration: ServerConfiguration, hub: SessionHub, store: RoomStore?,
         metrics: ServerMetrics, logger: Logger) {
        self.name = name
        self.kind = kind
        self.executor = QueueExecutor(label: "tether.room.\(name)")
        self.host = kind.instantiate(room: name)
        self.hub = hub
        self.store = kind.scope == .shared ? store : nil
        self.metrics = metrics
        self.logger = logger
        self.epoch = RandomID.make(length: 10)
        self.history = PatchHistory(maxPatches: configuration.historyMaxPatches, maxBytes: configuration.historyMaxBytes)
        self.maxStateBytes = configuration.maxStateBytes
        stopped.enter()
    }

    /// Runs `work` on the room's executor after everything enqueued before it.
    nonisolated func enqueue(_ work: @escaping @Sendable (isolated Room) -> Void) {
        executor.queue.async { self.assumeIsolated(work) }
    }

    /// Sends work to the socket thread. With durability on, it goes out only after every
    /// version produced before it is committed, so no client sees a version that could be lost.
    private func emit(_ work: @escaping @Sendable (SessionHub) -> Void) {
        let hub = self.hub
        if let store, store.durability != .none {
            store.afterPendingCommits { hub.post(work) }
        } else {
            hub.post(work)
        }
    }

    // MARK: Lifecycle

    func start(after predecessor: Room?) {
        predecessor?.stopped.wait()
        if let store { restore(from: store) }
        for (index, timer) in host.timers.enumerated() {
            let source = DispatchSource.makeTimerSource(queue: executor.queue)
            let interval = DispatchTimeInterval.nanoseconds(Int(timer.interval.components.seconds * 1_000_000_000 + timer.interval.components.attoseconds / 1_000_000_000))
            source.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
            // The source keeps the room alive until `stop()` cancels it.
            source.setEventHandler { self.assumeIsolated { room in room.tick(index) } }
            source.resume()
            timers.append(source)
        }
    }

    func stop() {
        guard !isStopped else { return }
        isStopped = true
        for timer in timers { timer.cancel() }
        timers.removeAll()
        store?.commit(RoomStore.Commit(room: name, kind: kind.name, epoch: epoch, patch: nil, version: version, state: host.state.encoded()))
        stopped.leave()
    }

    /// Continues the stored history (same epoch and version), or records a new one.
    private func restore(from store: RoomStore) {
        do {
            if let stored = try store.load(room: name) {
                try host.restore(from: stored.state)
                epoch = stored.epoch
                version = stored.version
                for patch in stored.patches { history.append(patch) }
                logger.debug("room \(name) restored at version \(version) of epoch \(epoch)")
                return
            }
        } catch {
            logger.error("room \(name): cannot restore its stored state (\(error)); starting a new epoch")
        }
        var commit = RoomStore.Commit(room: name, kind: kind.name, epoch: epoch, patch: nil, version: version, state: host.state.encoded())
        commit.startsEpoch = true
        store.commit(commit)
    }

    private func tick(_ index: Int) {
        host.timers[index].tick()
        do {
            if let patch = commitTurn(try host.finishTurn(maxEncodedSize: maxStateBytes)) {
                let list = subscriberList
                emit { hub in hub.broadcast(patch, to: list) }
            }
            refusedTicks = 0
        } catch {
            refusedTicks += 1
            // Once, then every 60th: a timer that keeps growing the state must not flood the log.
            if refusedTicks % 60 == 1 { logger.warning("room \(name): a timer tick was taken back: \(error) (\(refusedTicks) so far)") }
        }
    }

    // MARK: Subscribers

    /// Subscribes `session`: first a snapshot, or, when `since` names a version of this epoch
    /// still in the history, the patches after it (an empty patch when nothing changed).
    /// With an `id`, the stream's first message is followed by an ack at its version.
    func join(_ session: SessionHandle, since: ResumePoint?, id: Int? = nil) {
        if subscribers.insert(session).inserted { subscriberList = Array(subscribers) }
        let ack = id.map { ServerMessage.ack(id: $0, room: name, version: version).encoded() }
        if let since, since.epoch == epoch, let missing = history.patches(after: since.version, newest: version) {
            metrics.resumes(fromHistory: true)
            let patches = missing.isEmpty ? [PatchFrame(room: name, epoch: epoch, from: version, version: version, operations: [])] : missing
            emit { hub in
                for patch in patches { hub.send(.patch(patch), to: session) }
                if let ack { hub.send(.control(ack), to: session) }
            }
        } else {
            if since != nil { metrics.resumes(fromHistory: false) }
            sendSnapshot(to: session, thenAck: ack)
        }
    }

    func leave(_ session: SessionHandle) {
        if subscribers.remove(session) != nil { subscriberList = Array(subscribers) }
    }

    var subscriberCount: Int { subscribers.count }

    /// After the session's queue overflowed: a fresh snapshot restarts its stream.
    func resync(_ session: SessionHandle) {
        guard subscribers.contains(session) else { return }
        sendSnapshot(to: session)
    }

    private func sendSnapshot(to session: SessionHandle, thenAck ack: [UInt8]? = nil) {
        let frame: [UInt8]
        if let cached = snapshotCache, cached.version == version {
            frame = cached.frame
        } else {
            frame = ServerMessage.snapshot(room: name, epoch: epoch, version: version, state: host.state).encoded()
            snapshotCache = (version, frame)
        }
        let (room, version) = (name, version)
        emit { hub in
            hub.send(.snapshot(room: room, version: version, frame: frame), to: session)
            if let ack { hub.send(.control(ack), to: session) }
        }
    }

    // MARK: Actions

    /// Runs an action: its changes become one patch for every subscriber, then the sender gets
    /// an ack with that version (or an error, after any changes made before it failed).
    func perform(_ action: String, args: JSON?, id: Int, from sender: SessionHandle) {
        var failure: ProtocolError?
        do {
            try host.perform(action, args: args)
        } catch let error as ActionError {
            switch error {
            case .unknownAction: failure = ProtocolError(.unknownAction, error.description, id: id, room: name)
            case .invalidArgs: failure = ProtocolError(.invalidArgs, error.description, id: id, room: name)
            case .tooLarge: failure = ProtocolError(.tooLarge, error.description, id: id, room: name)
            }
        } catch {
            logger.error("action \(action) in room \(name) failed: \(error)")
            failure = ProtocolError(.internal, "the action failed on the server", id: id, room: name)
        }
        let patch: PatchFrame?
        do {
            patch = commitTurn(try host.finishTurn(maxEncodedSize: maxStateBytes))
        } catch {
            patch = nil
            failure = ProtocolError(.tooLarge, error.description, id: id, room: name)
            logger.notice("room \(name): action \(action) refused: \(error.description)")
        }
        metrics.action(outcome: failure?.code.rawValue ?? "ok")
        let reply = failure.map { ServerMessage.error($0) } ?? .ack(id: id, room: name, version: version)
        let replyFrame = reply.encoded()
        let list = subscriberList
        emit { hub in
            if let patch { hub.broadcast(patch, to: list) }
            hub.send(.control(replyFrame), to: sender)
        }
    }

    /// Makes the turn's operations one version step.
    private func commitTurn(_ operations: [PatchOperation]) -> PatchFrame? {
        guard !operations.isEmpty else { return nil }
        let patch = PatchFrame(room: name, epoch: epoch, from: version, version: version + 1, operations: operations)
        version += 1
        history.append(patch)
        metrics.patchProduced()
        if let store {
            let snapshotDue = version % RoomStore.snapshotInterval == 0
            store.commit(RoomStore.Commit(room: name, kind: kind.name, epoch: epoch, patch: patch, version: version,
                                          state: snapshotDue ? host.state.encoded() : nil))
        }
        return patch
    }

    /// The current state, for tests and tools.
    var state: JSON { host.state }
}
