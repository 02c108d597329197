import TetherJSON
import TetherProtocol
import TetherState
import TetherTransport

/// A room as its subscribers on this node see it: the epoch and version they have, the recent
/// history, the subscribers, the snapshot cache (plain and compressed), who is here (presence,
/// for kinds that keep it) and, when the ViewModel publishes values per viewer, each viewer's
/// view. A single node's `Room` (the owner, its steps
/// followed at once) and a cluster node's `ClusteredRoom` (following its room's log) serve their
/// subscribers with this one type. The document itself stays with whoever holds it (the
/// ViewModel, or the replica), handed in where a snapshot needs it. On the room's executor.
struct RoomFollowers {
    let room: String
    private(set) var epoch: String
    private(set) var version = 0
    private(set) var history: PatchHistory
    private(set) var subscribers = SubscriberList()
    private var snapshots = SnapshotCache()
    /// Who each subscriber is and what they see beyond the shared document, when the ViewModel
    /// publishes values per viewer; nil otherwise (then every subscriber gets the same frames).
    private(set) var viewerViews: ViewerViews?
    /// Who is here, for kinds that keep presence: the room's `RoomPresence` on one node,
    /// `ClusterPresence` on a cluster node; nil for other kinds.
    private var presence: (any PresenceKeeping)?
    /// `epoch` and `version` for the system room's list, readable from any thread.
    let published: RoomVersionCell
    private let compressAbove: Int?
    private let metrics: ServerMetrics

    init(room: String, epoch: String, perViewer: Bool, presence: (any PresenceKeeping)?, configuration: ServerConfiguration,
         metrics: ServerMetrics) {
        self.room = room
        self.presence = presence
        self.epoch = epoch
        self.published = RoomVersionCell(epoch: epoch)
        self.viewerViews = perViewer ? ViewerViews() : nil
        self.history = PatchHistory(maxPatches: configuration.historyMaxPatches, maxBytes: configuration.historyMaxBytes)
        self.compressAbove = configuration.compressionThreshold
        self.metrics = metrics
    }

    var hasEpoch: Bool { !epoch.isEmpty }

    // MARK: Subscribers

    /// Subscribes `session` and returns its first messages: when `since` names a version of this
    /// epoch still in the history, the patches after it (an empty patch when nothing changed),
    /// else a snapshot. A room with per-viewer values always sends a snapshot: the history holds
    /// the shared operations only, not what each viewer saw beyond them. `project` gives a viewer
    /// new here their projection; `document` the shared document (for a snapshot not cached).
    mutating func add(_ session: SessionHandle, since: ResumePoint?, project: (Viewer) -> [String: JSON],
                      document: () -> JSON) -> [RoomDelivery] {
        subscribers.add(session)
        viewerViews?.add(session, project: project)
        if let since, since.epoch == epoch, viewerViews == nil, let missing = history.patches(after: since.version, newest: version) {
            metrics.resumes(fromHistory: true)
            let patches = missing.isEmpty ? [PatchFrame(room: room, epoch: epoch, from: version, version: version, operations: [])] : missing
            return patches.map { .message(.patch($0), to: session) }
        }
        if since != nil { metrics.resumes(fromHistory: false) }
        return [snapshot(for: session, document: document)]
    }

    /// Unsubscribes `session`; false when it was not subscribed.
    mutating func remove(_ session: SessionHandle) -> Bool {
        guard subscribers.remove(session) else { return false }
        viewerViews?.remove(session)
        return true
    }

    /// The ack of a join with an `id`, at the version the subscriber now has.
    func joinAck(_ id: Int?, to session: SessionHandle) -> [RoomDelivery] {
        guard let id else { return [] }
        return [.message(.control(ServerMessage.ack(id: id, room: room, version: version).encoded()), to: session)]
    }

    /// The snapshot of the current version for `session` (their projection included), encoded
    /// and compressed once per version and view.
    mutating func snapshot(for session: SessionHandle, document: () -> JSON) -> RoomDelivery {
        let projection = viewerViews?.projection(of: session) ?? [:]
        let (room, epoch, version) = (self.room, self.epoch, self.version)
        let message = snapshots.message(room: room, version: version, projection: projection, compressAbove: compressAbove) {
            let state = projection.isEmpty ? document() : Projection.document(shared: document(), projection: projection)
            return ServerMessage.snapshot(room: room, epoch: epoch, version: version, state: state).encoded()
        }
        return .message(message, to: session)
    }

    // MARK: Presence

    /// What a presence change did: the frames for this node's listeners, and the member listed
    /// or the member id unlisted (a single node's ViewModel reacts to them).
    struct PresenceOutcome {
        var deliveries: [RoomDelivery] = []
        var listed: PresenceMember?
        var left: String?
        var changedMembers: Bool { listed != nil || left != nil }
    }

    /// A join's presence: lists the session, or makes it a spectator (a rejoin without presence
    /// unlists it), and gives a listener a presence snapshot that includes the change. Nothing in
    /// rooms without presence; once the room lists its maximum of members, a join with presence
    /// is a plain join.
    mutating func joinPresence(_ session: SessionHandle, _ join: PresenceJoin?,
                               windowEnded: @escaping @Sendable () -> Void) -> PresenceOutcome {
        guard presence != nil else { return PresenceOutcome() }
        let (listed, left) = presence!.join(session, join)
        var outcome = PresenceOutcome(listed: listed, left: left)
        if presence!.isListening(session) { outcome.deliveries.append(.message(.control(presence!.snapshot(for: session)), to: session)) }
        if outcome.changedMembers { outcome.deliveries += presenceChanged(windowEnded: windowEnded) }
        return outcome
    }

    /// The error for a presence update from `session`, when it may not update (nil: it may).
    func presenceRefusal(_ session: SessionHandle, id: Int?) -> RoomDelivery? {
        guard presence?.isListed(session) != true else { return nil }
        let reason = presence == nil ? "room \(room) keeps no presence" : "join \(room) with presence before updating it"
        return .message(.control(ServerMessage.error(ProtocolError(.invalidArgs, reason, id: id, room: room)).encoded()), to: session)
    }

    /// A listed session's presence update: every listener (the sender too) gets the change (at
    /// the window's end, with a window). The sender's ack, `presenceAck`, follows.
    mutating func updatePresence(_ session: SessionHandle, data: JSON, windowEnded: @escaping @Sendable () -> Void) -> PresenceOutcome {
        guard let listed = presence?.update(session, data: data) else { return PresenceOutcome() }
        return PresenceOutcome(deliveries: presenceChanged(windowEnded: windowEnded), listed: listed)
    }

    func presenceAck(_ id: Int?, to session: SessionHandle) -> [RoomDelivery] {
        guard let id else { return [] }
        return [.message(.control(ServerMessage.ack(id: id, room: room, version: nil).encoded()), to: session)]
    }

    /// `session` left: its stream stops and its member, if listed, is unlisted.
    mutating func leavePresence(_ session: SessionHandle, windowEnded: @escaping @Sendable () -> Void) -> PresenceOutcome {
        guard let left = presence?.remove(session) else { return PresenceOutcome() }
        return PresenceOutcome(deliveries: presenceChanged(windowEnded: windowEnded), left: left)
    }

    /// After a change of the presence document: the frames to send now, or none while a window
    /// gathers changes (`windowEnded` runs when it ends: then call `presenceWindowEnded`).
    mutating func presenceChanged(windowEnded: @escaping @Sendable () -> Void) -> [RoomDelivery] {
        guard presence != nil else { return [] }
        published.members = presence!.memberCount
        return presence!.deliveriesAfterChange(windowEnded: windowEnded)
    }

    /// The window's changes, one frame per listener.
    mutating func presenceWindowEnded() -> [RoomDelivery] {
        presence?.flush() ?? []
    }

    /// The room stops: no window runs any more.
    mutating func stopPresence() {
        presence?.stop()
    }

    // MARK: Following the room

    /// Each subscribed viewer's projection now (`project`: nil for unchanged), and the
    /// operations of those that changed; nothing without per-viewer values.
    mutating func updateViews(_ project: (Viewer) -> [String: JSON]?) -> [Viewer: [PatchOperation]] {
        viewerViews?.update(project) ?? [:]
    }

    /// Follows one version step (`patch`, which may span several versions) and returns what
    /// each subscriber gets of it: the shared frame, or for viewers whose projection changed
    /// (`changes`, from `updateViews`) the frame extended with their operations.
    mutating func follow(_ patch: PatchFrame, changes: [Viewer: [PatchOperation]] = [:]) -> [RoomDelivery] {
        version = patch.version
        published.version = version
        history.append(patch)
        guard !subscribers.isEmpty else { return [] }
        guard let viewerViews else { return [.patch(patch, to: subscribers.all)] }
        return viewerViews.deliveries(of: patch, changes: changes, to: subscribers.all, compressAbove: compressAbove)
    }

    /// Continues at `version` of `epoch` (a restored room, a replica's snapshot) with the
    /// history given, or starts over with none; `frame`: the snapshot frame of that version, as
    /// the log holds it, to serve joins without encoding it again.
    mutating func restart(epoch: String, version: Int, patches: [PatchFrame] = [], frame: [UInt8]? = nil) {
        self.epoch = epoch
        self.version = version
        published.epoch = epoch
        published.version = version
        history.removeAll()
        for patch in patches { history.append(patch) }
        if let frame {
            snapshots.seed(version: version, frame: frame, compressAbove: compressAbove)
        } else {
            snapshots.reset()
        }
    }
}


/// A room's subscribers: a dictionary for membership and an array kept in step for a broadcast to
/// share, one join or leave at a time (append, swap-remove). Rebuilding the array per join made
/// n joins cost O(n²): seconds for a reconnect storm of 15,000 clients into one room.
struct SubscriberList {
    private var positions: [SessionHandle: Int] = [:]
    /// Every subscriber, in no particular order.
    private(set) var all: [SessionHandle] = []

    var count: Int { all.count }
    var isEmpty: Bool { all.isEmpty }
    func contains(_ session: SessionHandle) -> Bool { positions[session] != nil }

    /// Adds `session`; false when it was there already.
    @discardableResult
    mutating func add(_ session: SessionHandle) -> Bool {
        guard positions[session] == nil else { return false }
        positions[session] = all.count
        all.append(session)
        return true
    }

    /// Removes `session`; false when it was not there.
    @discardableResult
    mutating func remove(_ session: SessionHandle) -> Bool {
        guard let index = positions.removeValue(forKey: session) else { return false }
        let last = all.removeLast()
        if index < all.count {
            all[index] = last
            positions[last] = index
        }
        return true
    }
}

/// Snapshot frames of one version, by projection (`[:]`: the shared document alone), each with
/// its compressed form when it is large enough: many joins at one version encode and compress
/// each view once. Bounded: with one view per viewer, a join storm would otherwise keep a
/// snapshot each.
struct SnapshotCache {
    static let maxViews = 64
    private var version = -1
    private var frames: [[String: JSON]: (frame: [UInt8], compressed: [UInt8]?)] = [:]

    /// The snapshot message of `version` for `projection`, made by `encode` when not cached.
    mutating func message(room: String, version: Int, projection: [String: JSON], compressAbove threshold: Int?,
                          encode: () -> [UInt8]) -> OutboundMessage {
        if self.version != version || frames.count >= Self.maxViews { reset(to: version) }
        let cached: (frame: [UInt8], compressed: [UInt8]?)
        if let hit = frames[projection] {
            cached = hit
        } else {
            let frame = encode()
            cached = (frame, MessageDeflater.compress(frame, ifAtLeast: threshold))
            frames[projection] = cached
        }
        return .snapshot(room: room, version: version, frame: cached.frame, compressed: cached.compressed)
    }

    /// Starts `version` with the shared document's frame as it came (a cluster's snapshot entry).
    mutating func seed(version: Int, frame: [UInt8], compressAbove threshold: Int?) {
        reset(to: version)
        frames[[:]] = (frame, MessageDeflater.compress(frame, ifAtLeast: threshold))
    }

    /// Forgets every frame (the next one asked for is encoded anew).
    mutating func reset(to version: Int = -1) {
        self.version = version
        frames = [:]
    }
}

