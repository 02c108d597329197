import Foundation
import TetherProtocol
import TetherState

/// The kinds the server knows, every live room and every stored one. All joins, leaves, room
/// creations and deletions pass through here, so it alone counts rooms (shared and per-session,
/// live and stored) and members, and an idle room can be dropped without racing a join. Every
/// socket shard's hub uses it: its state is under one lock, held for a lookup or an update,
/// never on the path of a delivery.
final class RoomRegistry: @unchecked Sendable {
    private let lock = NSLock()
    static let maxRoomNameBytes = 128

    private final class Entry {
        let room: any RoomEndpoint
        var members = 0
        var idleSince: ContinuousClock.Instant?
        init(room: any RoomEndpoint, idleSince: ContinuousClock.Instant) {
            self.room = room
            self.idleSince = idleSince
        }
    }

    private struct Retiring {
        weak var room: (any RoomEndpoint)?
    }

    /// A shared room that exists beyond this moment: stored, or live and not yet stored. Kept
    /// here so the room list, the per-kind limit and expiry never wait for the database.
    struct KnownRoom {
        var kind: String
        var version: Int
        /// Seconds since 1970.
        var lastChange: Int
        /// The encoded state, as last stored (or estimated by the live room).
        var bytes: Int
    }

    private let kinds: [String: ViewModelKind]
    private var shared: [String: Entry] = [:]
    /// Rooms dropped for idleness (or deleted) whose `stop` may not have run yet.
    private var retiring: [String: Retiring] = [:]
    /// Live per-session instances; their sessions own them.
    private var privateRoomCount = 0
    private var perSession: [String: PerSessionCount] = [:]
    /// Every shared room of an application kind that exists, live or stored; for a live room the
    /// room's own `published` cell is newer. Rooms kept in memory only are known while live.
    private var known: [String: KnownRoom] = [:]
    private var knownPerKind: [String: Int] = [:]
    /// Whether rooms outlive their time in memory (a store).
    private let keepsRooms: Bool

    /// `stored`: the rooms in the store at start (nil without one).
    init(kinds: [ViewModelKind], stored: [StoredRoomSummary]? = nil) {
        self.kinds = Dictionary(kinds.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        keepsRooms = stored != nil
        for room in stored ?? [] {
            remember(room.name, KnownRoom(kind: room.kind, version: room.version, lastChange: room.lastChange, bytes: room.bytes))
        }
    }

    var sharedRoomCount: Int { lock.withLock { shared.count } }
    var roomCount: Int { lock.withLock { shared.count + privateRoomCount } }
    func hasSharedRoom(named name: String) -> Bool { lock.withLock { shared[name] != nil } }
    var kindNames: [String] { kinds.keys.sorted() }
    /// Every registered kind, sorted by name.
    var allKinds: [ViewModelKind] { kinds.values.sorted { $0.name < $1.name } }
    func kind(named name: String) -> ViewModelKind? { kinds[name] }

    /// The kind a room name ("KIND" or "KIND:INSTANCE") refers to, or `unknown_room`.
    func kind(forRoom name: String) -> Result<ViewModelKind, ProtocolError> {
        guard !name.isEmpty, name.utf8.count <= Self.maxRoomNameBytes else {
            return .failure(ProtocolError(.unknownRoom, "a room name has 1 to \(Self.maxRoomNameBytes) bytes", room: name))
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return .failure(ProtocolError(.unknownRoom, "a room name has no control characters", room: name))
        }
        let parts = name.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2, parts[1].isEmpty {
            return .failure(ProtocolError(.unknownRoom, "\"\(name)\": the instance after the colon is empty", room: name))
        }
        guard let kind = kinds[String(parts[0])] else {
            return .failure(ProtocolError(.unknownRoom, "no room kind \"\(parts[0])\"; kinds are \(kindNames.joined(separator: ", "))", room: name))
        }
        if parts.count == 2, SystemRoom.isSystemKind(kind.name) {
            return .failure(ProtocolError(.unknownRoom, "\(kind.name) is the server's own room: it has no instances", room: name))
        }
        if parts.count == 2, !kind.instances.contains(String(parts[1])) {
            let which = kind.instances.hasInstances
                ? "the instances of \(kind.name) are: \(kind.instances)"
                : "\(kind.name) has no instances: its only room is \(kind.name)"
            return .failure(ProtocolError(.unknownRoom, "no room \"\(name)\": \(which)", room: name))
        }
        return .success(kind)
    }

    // MARK: Known rooms

    /// Whether a shared room of this name exists, live or stored.
    func exists(_ name: String) -> Bool { lock.withLock { known[name] != nil || shared[name] != nil } }

    /// Rooms of `kind` that exist, live or stored.
    func roomCount(ofKind kind: String) -> Int { lock.withLock { knownPerKind[kind, default: 0] } }

    private func remember(_ name: String, _ room: KnownRoom) {
        if known.updateValue(room, forKey: name) == nil { knownPerKind[room.kind, default: 0] += 1 }
    }

    private func forget(_ name: String) {
        guard let room = known.removeValue(forKey: name) else { return }
        knownPerKind[room.kind, default: 1] -= 1
    }

    /// A room that existed and whose successor will not be the same room any more (deleted):
    /// removed from the live rooms (its successor waits for it to stop) and the known ones.
    /// Returns it when it was live, with its member count.
    func remove(_ name: String) -> (room: any RoomEndpoint, members: Int)? {
        lock.withLock {
            forget(name)
            guard let entry = shared.removeValue(forKey: name) else { return nil }
            retiring[name] = Retiring(room: entry.room)
            return (entry.room, entry.members)
        }
    }

    /// A room of this name that left memory and may not have stopped yet.
    func retiringRoom(named name: String) -> (any RoomEndpoint)? { lock.withLock { retiring[name]?.room } }

    /// Every room, live or stored, with what the room list shows of it (unsorted).
    var listing: [(name: String, kind: ViewModelKind?, live: (room: any RoomEndpoint, members: Int)?, known: KnownRoom?)] {
        lock.withLock {
            var rooms = shared.map { name, entry in (name: name, kind: Optional(entry.room.kind), live: Optional((entry.room, entry.members)), known: known[name]) }
            for (name, room) in known where shared[name] == nil {
                rooms.append((name: name, kind: kinds[room.kind], live: nil, known: room))
            }
            return rooms
        }
    }

    /// The shared room with this name; `make` creates it (given the same-named room still
    /// stopping, if any) on first use. A new room counts as idle until someone joins.
    /// `addingMember`: a join, counted in the same step, so no other shard's sweep can drop the
    /// room as idle between finding it and joining it.
    func sharedRoom(named name: String, now: ContinuousClock.Instant, wallClock: Int, addingMember: Bool = false,
                    make: (_ predecessor: (any RoomEndpoint)?) -> any RoomEndpoint) -> any RoomEndpoint {
        lock.withLock {
            let entry: Entry
            if let existing = shared[name] {
                entry = existing
            } else {
                let room = make(retiring.removeValue(forKey: name)?.room)
                entry = Entry(room: room, idleSince: now)
                shared[name] = entry
                if known[name] == nil, !SystemRoom.isSystemKind(room.kind.name) {
                    remember(name, KnownRoom(kind: room.kind.name, version: 0, lastChange: wallClock, bytes: 0))
                }
            }
            if addingMember {
                entry.members += 1
                entry.idleSince = nil
            }
            return entry.room
        }
    }

    /// Takes `name` for a room made outside a room (a fork, written to the store by `write`
    /// under the lock, so no join makes the room meanwhile); false when a room of that name
    /// exists, live, stored or stopping.
    func claim(_ name: String, _ room: KnownRoom, write: () -> Void) -> Bool {
        lock.withLock {
            guard known[name] == nil, shared[name] == nil, retiring[name] == nil else { return false }
            write()
            remember(name, room)
            return true
        }
    }

    // MARK: Per-session kinds

    /// A new per-session instance of `kind`, counted until `releasePrivateRooms`.
    func privateRoom(kind: String, make: () -> any RoomEndpoint) -> any RoomEndpoint {
        lock.withLock {
            privateRoomCount += 1
            perSession[kind, default: PerSessionCount()].instances += 1
        }
        return make()
    }

    /// A session closed: its per-session instances (one kind each) are gone.
    func releasePrivateRooms(kinds: [String]) {
        lock.withLock {
            privateRoomCount -= kinds.count
            for kind in kinds { perSession[kind, default: PerSessionCount()].instances -= 1 }
            perSession = perSession.filter { $0.value.instances > 0 || $0.value.subscribers > 0 }
        }
    }

    /// A session joined (+1) or left (-1) its instance of a per-session kind.
    func countPrivateSubscriber(kind: String, _ change: Int) {
        lock.withLock { perSession[kind, default: PerSessionCount()].subscribers += change }
    }

    /// Live instances and their subscribers, by per-session kind.
    var perSessionCounts: [String: PerSessionCount] { lock.withLock { perSession } }

    struct PerSessionCount: Equatable {
        var instances = 0
        var subscribers = 0
    }

    // MARK: Members

    func addMember(_ name: String) {
        lock.withLock {
            guard let entry = shared[name] else { return }
            entry.members += 1
            entry.idleSince = nil
        }
    }

    /// One member of `room` left (nothing when `name` is another room by now: deleted meanwhile).
    func removeMember(_ name: String, of room: any RoomEndpoint, now: ContinuousClock.Instant) {
        lock.withLock {
            guard let entry = shared[name], entry.room === room else { return }
            entry.members -= 1
            if entry.members == 0 { entry.idleSince = now }
        }
    }

    /// Drops shared rooms that have had no members for `timeout`; returns them so they can be
    /// stopped.
    func removeIdleRooms(olderThan timeout: Duration, now: ContinuousClock.Instant) -> [any RoomEndpoint] {
        lock.withLock {
            var removed: [any RoomEndpoint] = []
            for (name, entry) in shared {
                if let since = entry.idleSince, now - since >= timeout {
                    shared[name] = nil
                    retiring[name] = Retiring(room: entry.room)
                    removed.append(entry.room)
                    // What the room list shows of it from now on: its last figures, as it stores them.
                    if keepsRooms, var room = known[name] {
                        room.version = entry.room.published.version
                        room.lastChange = entry.room.published.lastChange
                        room.bytes = entry.room.published.stateBytes
                        known[name] = room
                    } else {
                        forget(name)
                    }
                }
            }
            retiring = retiring.filter { $0.value.room != nil }
            return removed
        }
    }

    /// Forgets every shared room (at shutdown, once they are stopped).
    func removeAllSharedRooms() { lock.withLock { shared.removeAll() } }

    var sharedRooms: [(room: any RoomEndpoint, members: Int)] { lock.withLock { shared.values.map { ($0.room, $0.members) } } }
}

extension ViewModelKind {
    /// The kind as `describe` answers it.
    var protocolDescription: KindDescription {
        KindDescription(name: name, scope: scope.rawValue,
                        actions: actions.map { KindDescription.Action(name: $0.name, arguments: $0.arguments) },
                        schema: contractSchema?.document, fingerprint: contractSchema?.fingerprint)
    }
}
