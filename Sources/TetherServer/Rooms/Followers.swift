import TetherJSON
import TetherProtocol
import TetherTransport

// What a room keeps for its subscribers on this node, whichever room shape serves them: a
// single node's `Room` and a cluster's `ClusteredRoom` (which follows its room's log) share these.

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

extension PatchHistory {
    /// A joining subscriber's first messages: when `since` names a version of `epoch` still held
    /// here, the patches after it (an empty patch when nothing changed); else the room's
    /// `snapshot`. A room with per-viewer values (`patchesServe` false) always sends a snapshot:
    /// the history holds the shared operations only, not what each viewer saw beyond them.
    func firstMessages(for session: SessionHandle, since: ResumePoint?, room: String, epoch: String, version: Int,
                       patchesServe: Bool, metrics: ServerMetrics, snapshot: () -> RoomDelivery) -> [RoomDelivery] {
        if let since, since.epoch == epoch, patchesServe, let missing = patches(after: since.version, newest: version) {
            metrics.resumes(fromHistory: true)
            let patches = missing.isEmpty ? [PatchFrame(room: room, epoch: epoch, from: version, version: version, operations: [])] : missing
            return patches.map { .message(.patch($0), to: session) }
        }
        if since != nil { metrics.resumes(fromHistory: false) }
        return [snapshot()]
    }
}
