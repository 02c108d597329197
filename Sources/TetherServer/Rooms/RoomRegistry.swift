import TetherProtocol
import TetherState

/// The kinds the server knows and every live room, on the hub's queue. All joins, leaves and
/// room creations pass through here, so it alone counts rooms (shared and per-session) and
/// members, and an idle room can be dropped without racing a join.
final class RoomRegistry {
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

    private let kinds: [String: ViewModelKind]
    private var shared: [String: Entry] = [:]
    /// Rooms dropped for idleness whose `stop` may not have run yet.
    private var retiring: [String: Retiring] = [:]
    /// Live per-session instances; their sessions own them.
    private(set) var privateRoomCount = 0

    init(kinds: [ViewModelKind]) {
        self.kinds = Dictionary(kinds.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    var sharedRoomCount: Int { shared.count }
    var roomCount: Int { shared.count + privateRoomCount }
    func hasSharedRoom(named name: String) -> Bool { shared[name] != nil }
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
        return .success(kind)
    }

    /// The shared room with this name; `make` creates it (given the same-named room still
    /// stopping, if any) on first use. A new room counts as idle until someone joins.
    func sharedRoom(named name: String, now: ContinuousClock.Instant,
                    make: (_ predecessor: (any RoomEndpoint)?) -> any RoomEndpoint) -> any RoomEndpoint {
        if let entry = shared[name] { return entry.room }
        let room = make(retiring.removeValue(forKey: name)?.room)
        shared[name] = Entry(room: room, idleSince: now)
        return room
    }

    /// A new per-session instance, counted until `releasePrivateRooms`.
    func privateRoom(make: () -> any RoomEndpoint) -> any RoomEndpoint {
        privateRoomCount += 1
        return make()
    }

    /// A session closed: its per-session instances are gone.
    func releasePrivateRooms(_ count: Int) {
        privateRoomCount -= count
    }

    func addMember(_ name: String) {
        guard let entry = shared[name] else { return }
        entry.members += 1
        entry.idleSince = nil
    }

    func removeMember(_ name: String, now: ContinuousClock.Instant) {
        guard let entry = shared[name] else { return }
        entry.members -= 1
        if entry.members == 0 { entry.idleSince = now }
    }

    /// Drops shared rooms that have had no members for `timeout`; returns them so they can be
    /// stopped.
    func removeIdleRooms(olderThan timeout: Duration, now: ContinuousClock.Instant) -> [any RoomEndpoint] {
        var removed: [any RoomEndpoint] = []
        for (name, entry) in shared {
            if let since = entry.idleSince, now - since >= timeout {
                shared[name] = nil
                retiring[name] = Retiring(room: entry.room)
                removed.append(entry.room)
            }
        }
        retiring = retiring.filter { $0.value.room != nil }
        return removed
    }

    /// Every live shared room with its member count.
    var sharedRooms: [(room: any RoomEndpoint, members: Int)] { shared.values.map { ($0.room, $0.members) } }
}

extension ViewModelKind {
    /// The kind as `describe` answers it.
    var protocolDescription: KindDescription {
        KindDescription(name: name, scope: scope.rawValue,
                        actions: actions.map { KindDescription.Action(name: $0.name, arguments: $0.arguments) })
    }
}
