import TetherBinding
import TetherProtocol
import TetherJSON

/// What changed in a room's mirror.
public enum RoomChange: Sendable {
    /// The whole state was replaced (first join, or a resync). `resynced` is true when the mirror
    /// had a version before and lost continuity.
    case snapshot(version: Int, resynced: Bool)
    /// Operations applied, taking the mirror from `from` to `version`.
    case patch(from: Int, version: Int, operations: [PatchOperation])
    /// The shown state was recomputed: a prediction made or dropped, or the predictions still
    /// waiting applied again over the server's newest state (`RemoteRoom.state`).
    case predicted
}

/// The mirror of one room: its JSON state, epoch and version, built only from the server's
/// snapshot and patches, with observables for any path.
///
/// A patch is applied only when its `from` equals the mirror's version; a gap makes the room
/// rejoin with `since`, and a patch that does not apply (never half-applied) makes it rejoin for
/// a fresh snapshot.
///
/// Predictions (`send(_:_:predict:)`) are applied over the server's state (`serverState`) to make
/// the state shown (`state`), until their actions are answered (docs/CLIENTS.md, "Prediction").
///
/// A room does not keep its client alive: hold on to the `TetherClient` while you use it.
@MainActor
public final class RemoteRoom {
    public let name: String
    /// What observers see: `serverState` with every prediction still waiting applied, in order.
    public private(set) var state: JSON = .null
    /// The state as the server's snapshot and patches made it.
    public private(set) var serverState: JSON = .null
    public private(set) var epoch: String?
    public private(set) var version: Int?
    /// The paths the last patch touched (for an inspector's highlight); empty after a snapshot.
    public private(set) var lastChangedPaths: [JSONPointer] = []
    /// The last error the server sent about this room outside an action (e.g. a refused join).
    public let lastError = Observable<ProtocolError?>(nil)
    /// Who is here (RoomPresence.swift): member id → member, mirrored from the presence stream;
    /// empty unless the client joins with presence (or watches it, `ClientOptions.watchPresence`)
    /// in a room that keeps it.
    public let members = ObservableMap<String, RoomMember>()
    /// The presence mirror's version (its own, apart from the state's); nil before a snapshot.
    public internal(set) var presenceVersion: Int?
    /// The presence document as received, and what this client sends with its joins.
    var presenceDocument: JSON = .object([:])
    var presenceData: JSON?
    /// The `ContractRoom`s over this mirror, by contract: kept while it is joined and the client open.
    var contractRooms: [ObjectIdentifier: AnyObject] = [:]

    private(set) weak var client: TetherClient?
    private let changes = ListenerSet<RoomChange>()
    private var pathWatchers: [PathWatcher] = []
    private var listWatchers: [ListWatcher] = []
    /// While a rejoin is in flight, patches that don't continue the mirror are dropped.
    private var isRejoining = false
    /// Where the first join resumes, for a mirror created with `since` (until it has a version).
    private let startPoint: ResumePoint?
    /// False while a mirror created with `since` has only followed patches: it knows the version
    /// but not the state, which only a snapshot brings.
    public private(set) var hasState: Bool
    /// Predictions of actions not yet answered, by action number (numbers grow: in order).
    private var predictions: [(seq: Int, predict: (inout JSON) -> Void)] = []
    /// A patch arrived while predictions wait: `state` is recomputed `rebaseDelay` later, or at
    /// once when an answer comes first. The ack of an action comes right behind its patch (the
    /// server writes them together), so its prediction goes before the patch shows, and the
    /// action is not shown twice.
    private var rebaseScheduled = false
    static let rebaseDelay: Duration = .milliseconds(20)
    /// The patches received since the last rebase, told to `observeChanges` listeners with it.
    private var patchesToTell: [RoomChange] = []

    init(name: String, client: TetherClient, since: ResumePoint? = nil) {
        self.name = name
        self.client = client
        presenceData = client.options.presence
        startPoint = since
        hasState = since == nil
    }

    var resumePoint: ResumePoint? {
        guard let epoch, let version else { return startPoint }
        return ResumePoint(epoch: epoch, version: version)
    }

    /// True once the first snapshot (or resumed patch) has arrived.
    public var isSynced: Bool { version != nil && !isRejoining }

    // MARK: Observing

    /// The value at `path`, decoded as `T`; nil while absent or not decodable as `T`. Its
    /// listeners fire only when something at or below `path` changed.
    public func observable<T: Decodable>(_ path: JSONPointer, as type: T.Type) -> ReadOnlyObservable<T?> {
        let observable = Observable<T?>(Self.decode(T.self, state.value(at: path)))
        let watcher = PathWatcher(path: path, last: state.value(at: path)) { [weak observable] json in
            guard let observable else { return false }
            observable.value = Self.decode(T.self, json)
            return true
        }
        pathWatchers.append(watcher)
        return observable
    }

    /// Like `observable(_:as:)`, with `fallback` standing in while the value is absent.
    public func observable<T: Decodable>(_ path: JSONPointer, as type: T.Type, default fallback: T) -> ReadOnlyObservable<T> {
        observable(path, as: type).map { $0 ?? fallback }
    }

    /// An array at `path` as an observable list of `T`, with an event per item for each array
    /// operation (`add /items/3` is an insert at 3). It is a mirror: don't mutate it.
    public func list<T: Decodable>(_ path: JSONPointer, of type: T.Type) -> ObservableList<T> {
        let list = ObservableList<T>()
        let watcher = ListWatcher(path: path, list: list)
        watcher.rebuild(from: state.value(at: path))
        listWatchers.append(watcher)
        return list
    }

    /// Every snapshot and patch applied to this mirror.
    public func observeChanges(_ listener: @escaping (RoomChange) -> Void) -> Cancellable {
        changes.add(listener)
    }

    // MARK: Acting

    /// Sends an action to this room; returns the ack's version or throws the server's error
    /// (`TetherClient.send`: queued while not connected, run once).
    ///
    /// `predict` changes the state as the action is expected to: observers see it at once, and
    /// until the answer the mirror shows the server's state with it applied (and any later
    /// predictions after it); the answer drops it, so the server's own result shows.
    @discardableResult
    public func send(_ action: String, _ args: JSON? = nil, timeout: Duration? = nil,
                     predict: ((inout JSON) -> Void)? = nil) async throws -> Int {
        guard let client else { throw TetherClientError.notSent("the client no longer exists") }
        return try await client.send(action, to: name, args: args, timeout: timeout, predict: predict)
    }

    /// Unsubscribes; the mirror stops changing (and lists no members).
    public func leave() {
        client?.leave(self)
        forgetPresence()
        contractRooms = [:]
    }

    // MARK: From the client

    /// The server deleted the room (`room_deleted`): not joined any more, last state kept.
    func wasDeleted(_ error: ProtocolError) {
        version = nil
        isRejoining = false
        forgetPresence()
        contractRooms = [:]
        lastError.value = error
    }

    func willJoin() {
        isRejoining = version != nil
    }

    // MARK: Predictions

    func addPrediction(seq: Int, _ predict: @escaping (inout JSON) -> Void) {
        predictions.append((seq, predict))
        var shown = state
        predict(&shown)
        show(shown)
    }

    /// Action `seq` was answered: its prediction goes (the server's state has the action, or never will).
    func dropPrediction(seq: Int) {
        guard let index = predictions.firstIndex(where: { $0.seq == seq }) else { return }
        predictions.remove(at: index)
        rebase()
    }

    /// `state` = the server's state with the waiting predictions applied over it, in order.
    private func rebase() {
        rebaseScheduled = false
        var shown = serverState
        for prediction in predictions { prediction.predict(&shown) }
        show(shown)
    }

    /// Shows `shown` as the state, telling the watchers whose values changed, then the listeners
    /// of changes: the patches received meanwhile (the version moved), else `.predicted`.
    private func show(_ shown: JSON) {
        let patches = patchesToTell
        patchesToTell = []
        if shown != state {
            state = shown
            lastChangedPaths = []
            for watcher in pathWatchers { watcher.update(from: state) }
            for watcher in listWatchers { watcher.rebuild(from: state.value(at: watcher.path)) }
            prune()
            if patches.isEmpty { changes.emit(.predicted) }
        }
        for patch in patches { changes.emit(patch) }
    }

    // MARK: From the server

    func receiveSnapshot(epoch: String, version: Int, state: JSON) {
        let resynced = self.version != nil && (epoch != self.epoch || isRejoining || version != self.version)
        self.epoch = epoch
        self.version = version
        serverState = state
        var shown = state
        for prediction in predictions { prediction.predict(&shown) }
        self.state = shown
        rebaseScheduled = false
        patchesToTell = []  // the snapshot tells it all
        hasState = true
        isRejoining = false
        lastChangedPaths = []
        for watcher in pathWatchers { watcher.update(from: shown) }
        for watcher in listWatchers { watcher.rebuild(from: shown.value(at: watcher.path)) }
        prune()
        changes.emit(.snapshot(version: version, resynced: resynced))
        if resynced { client?.roomResynced(self) }
    }

    func receivePatch(epoch: String, from: Int, version: Int, operations: [PatchOperation]) {
        if self.version == nil, let startPoint, startPoint.epoch == epoch, startPoint.version == from {
            self.epoch = epoch  // the resumed stream of a mirror created with `since`
        }
        guard epoch == self.epoch, from == self.version ?? startPoint?.version else {
            // A gap, or a patch of another epoch: resume from what we have.
            if !isRejoining { client?.join(self) }
            return
        }
        if hasState {
            do {
                try serverState.apply(operations)  // atomic: on failure the state is unchanged
            } catch {
                client?.logger.warning("room \(name): patch \(from)->\(version) does not apply (\(error)); resyncing from a snapshot")
                client?.join(self, resume: false)
                return
            }
        }
        self.version = version
        isRejoining = false
        guard predictions.isEmpty else {
            patchesToTell.append(.patch(from: from, version: version, operations: operations))
            if !rebaseScheduled {
                rebaseScheduled = true
                Task { @MainActor [weak self] in
                    try? await Task.sleep(for: Self.rebaseDelay)
                    guard let self, self.rebaseScheduled else { return }
                    self.rebase()
                }
            }
            return
        }
        if hasState { state = serverState }
        var changed: [JSONPointer] = []
        for operation in operations {
            if case .move(let source, _) = operation { changed.append(source) }
            changed.append(operation.path)
        }
        lastChangedPaths = changed
        for watcher in pathWatchers where changed.contains(where: { $0.overlaps(watcher.path) }) {
            watcher.update(from: state)
        }
        for watcher in listWatchers where changed.contains(where: { $0.overlaps(watcher.path) }) {
            watcher.apply(operations, finalState: state)
        }
        prune()
        changes.emit(.patch(from: from, version: version, operations: operations))
    }

    private func prune() {
        pathWatchers.removeAll { !$0.isAlive }
        listWatchers.removeAll { !$0.isAlive }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ json: JSON?) -> T? {
        guard let json else { return nil }
        return try? JSONValueDecoder().decode(T.self, from: json)
    }
}
