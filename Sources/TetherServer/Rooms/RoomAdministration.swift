import Foundation
import TetherJSON
import TetherProtocol
import TetherState

/// One room as the room list shows it (`GET /rooms`, `tether rooms`, the dashboard's overview):
/// a shared room, live or stored, or every instance of a per-session kind together.
public struct RoomListEntry: Codable, Equatable, Sendable {
    public var name: String
    public var kind: String
    public var scope: String
    /// Connections subscribed on this server now (0 for a room not in memory).
    public var subscribers: Int
    /// Whether the room is in this server's memory now (else it is only stored).
    public var inMemory: Bool
    /// Shared rooms: the version reached, and the epoch while in memory.
    public var version: Int?
    public var epoch: String?
    /// Shared rooms: the state's size in bytes as JSON (estimated while in memory; as last
    /// snapshotted when only stored); nil when unknown.
    public var bytes: Int?
    /// Shared rooms: when the state last changed, in seconds since 1970; nil when unknown (a
    /// cluster's rooms not in this node's memory). A cluster node's room in memory gives the
    /// last step it applied, or when it was loaded.
    public var lastChange: Int?
    /// Per-session kinds only: live private instances.
    public var instances: Int?
    /// Rooms of kinds that keep presence only: the members listed now (spectators are not; 0
    /// for a room not in memory).
    public var members: Int?
}

/// What `RoomService.deleteRoom(named:)` did.
public enum RoomDeletion: Equatable, Sendable {
    /// Gone from memory (if it was there: its `subscribers` got `room_deleted`) and from storage.
    case deleted(wasInMemory: Bool, subscribers: Int)
    /// No such room: never created, or deleted already.
    case notFound(String)
    /// This room can't be deleted (the server's own, a per-session kind).
    case refused(String)
    /// This server can't delete rooms (a cluster node).
    case unsupported(String)
}

extension RoomService {
    /// How often idle rooms are checked against their kind's expiry.
    static let expiryCheckInterval: Duration = .seconds(60)

    // MARK: Listing

    /// Every room, live or stored, sorted by name; per-session kinds as one entry each.
    public func roomList() -> [RoomListEntry] {
        var entries = registry.listing.map { name, kind, live, known in
            // The server's own room changes every second and is never stored: no size or age.
            let stored = !SystemRoom.isSystemKind(name)
            return RoomListEntry(name: name, kind: kind?.name ?? known?.kind ?? "?", scope: RoomScope.shared.rawValue,
                                 subscribers: live?.members ?? 0, inMemory: live != nil,
                                 version: live?.room.published.version ?? known?.version,
                                 epoch: live?.room.published.epoch,
                                 bytes: (live?.room.published.stateBytes ?? known?.bytes).flatMap { $0 > 0 && stored ? $0 : nil },
                                 lastChange: (live?.room.published.lastChange ?? known?.lastChange).flatMap { $0 > 0 && stored ? $0 : nil },
                                 members: kind?.hasPresence == true ? live?.room.published.members ?? 0 : nil)
        }
        for (kind, counts) in registry.perSessionCounts where counts.instances > 0 {
            entries.append(RoomListEntry(name: kind, kind: kind, scope: RoomScope.perSession.rawValue, subscribers: counts.subscribers,
                                         inMemory: true, instances: counts.instances))
        }
        return entries.sorted { $0.name < $1.name }
    }

    // MARK: Deleting

    /// Deletes a shared room: its subscribers get `room_deleted` (their stream of it ends), it
    /// leaves memory without storing its state, and the store forgets it after its last
    /// commits. A later join makes a new, empty room with a new epoch.
    public func deleteRoom(named name: String) -> RoomDeletion {
        deleteRoom(named: name, because: "deleted on request")
    }

    /// `reason` is for the log. (An expiring room has no subscribers to tell.)
    private func deleteRoom(named name: String, because reason: String, expired: Bool = false) -> RoomDeletion {
        let kindName = String(name.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)[0])
        guard let kind = registry.kind(named: kindName) else { return .notFound("no room \(name): no kind \(kindName)") }
        if SystemRoom.isSystemKind(kind.name) { return .refused("\(name) is the server's own room: it can't be deleted") }
        guard kind.scope == .shared else {
            return .refused("\(kind.name) is per-session: each connection has its own instance, gone when it closes")
        }
        guard sharedRoomsAreLocal else {
            return .unsupported("deleting rooms is not supported on a cluster yet: a room's log lives in NATS JetStream and other nodes may hold it (docs/CLUSTER.md)")
        }
        let retiring = registry.retiringRoom(named: name)
        guard registry.exists(name) || retiring != nil else { return .notFound("no room \(name)") }
        let frame = ServerMessage.error(ProtocolError(.roomDeleted, "room \(name) was deleted by the server's administrator; join it again for a new, empty room", room: name)).encoded()
        let live = registry.remove(name)
        let told = live?.members ?? 0
        // Every shard's subscribers, each on its own shard's thread: until then their requests
        // reach the deleted room, which answers that it is moving, and a join meanwhile gets
        // the new room (`SessionHub.join` drops the old one).
        if let doomed = live?.room {
            for hub in hubs.hubs {
                hub.queue.execute { hub.endStream(of: doomed, frame: frame) }
            }
        }
        // Rooms of a single node are `Room`s (`sharedRoomsAreLocal`). A room that is not live
        // may still be stopping: it deletes itself after its last commit; else the store alone.
        if let room = (live?.room ?? retiring) as? Room {
            room.delete()
        } else {
            store?.delete(room: name)
        }
        logger.notice("room \(name) \(reason) (\(live == nil ? "not in memory" : "was in memory, \(told) subscribers told"))")
        webhooks?.record(expired ? .roomExpired : .roomDeleted, room: name) { _ in
            WebhookEvent.roomDeleted(room: name, kind: kind.name, expired: expired, at: Date().timeIntervalSince1970)
        }
        return .deleted(wasInMemory: live != nil, subscribers: told)
    }

    // MARK: Expiry

    /// How long idle rooms of `kind` are kept: the server's setting for it, else the kind's own.
    func expiry(of kind: ViewModelKind) -> Duration? {
        if let configured = configuration.roomExpiry[kind.name] { return configured == .zero ? nil : configured }
        return kind.expireAfter
    }

    /// Deletes the rooms of kinds with an expiry that have had no subscribers here and no change
    /// for that long (a live room with subscribers never expires).
    func deleteExpiredRooms() {
        // A cluster can't delete rooms yet (`deleteRoom`): its rooms' last change is for the list only.
        guard sharedRoomsAreLocal else { return }
        let now = runtime.clock.secondsSince1970
        for (name, kind, live, known) in registry.listing {
            guard let kind, kind.scope == .shared, !SystemRoom.isSystemKind(kind.name), let expiry = expiry(of: kind) else { continue }
            if let live, live.members > 0 { continue }
            guard let lastChange = live?.room.published.lastChange ?? known?.lastChange, lastChange > 0,
                  now - lastChange >= Int(expiry.components.seconds) else { continue }
            _ = deleteRoom(named: name, because: "expired: unchanged and without subscribers for \(RoomExpirySetting.text(expiry)) (its kind's expiry, or --room-expiry)",
                           expired: true)
        }
    }
}
