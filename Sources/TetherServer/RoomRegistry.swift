import TetherProtocol
import TetherJSON
import TetherState

/// The kinds the server knows and its live shared rooms, on the socket thread. All joins and
/// leaves pass through here, so membership counts are exact and an idle room can be dropped
/// without racing a join.
final class RoomRegistry {
    static let maxRoomNameBytes = 128

    private final class Entry {
        let room: Room
        var members = 0
        var idleSince: ContinuousClock.Instant? = .now
        init(room: Room) { self.room = room }
    }

    private struct Retiring {
        weak var room: Room?
    }

    private let kinds: [String: ViewModelKind]
    /// Makes a room, given the one of the same name still stopping (if any).
    private let makeRoom: (String, ViewModelKind, Room?) -> Room
    private var shared: [String: Entry] = [:]
    /// Rooms dropped for idleness whose `stop` may not have run yet.
    private var retiring: [String: Retiring] = [:]
    /// Live per-session instances (owned by their sessions), counted for metrics.
    var privateRoomCount = 0

    init(kinds: [ViewModelKind], makeRoom: @escaping (String, ViewModelKind, Room?) -> Room) {
        self.kinds = Dictionary(kinds.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        self.makeRoom = makeRoom
    }

    var sharedRoomCount: Int { shared.count }
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
        return .success(kind)
    }

    /// The shared room with this name, created (and started) on first use.
    func sharedRoom(named name: String, kind: ViewModelKind) -> Room {
        if let entry = shared[name] { return entry.room }
        let room = makeRoom(name, kind, retiring.removeValue(forKey: name)?.room)
        shared[name] = Entry(room: room)
        return room
    }

    func addMember(_ name: String) {
        guard let entry = shared[name] else { return }
        entry.members += 1
        entry.idleSince = nil
    }

    func removeMember(_ name: String) {
        guard let entry = shared[name] else { return }
        entry.members -= 1
        if entry.members == 0 { entry.idleSince = .now }
    }

    /// Drops shared rooms that have had no members for `timeout`; returns them so they can be
    /// stopped.
    func removeIdleRooms(olderThan timeout: Duration, now: ContinuousClock.Instant = .now) -> [Room] {
        var removed: [Room] = []
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

    func allRooms() -> [Room] { shared.values.map(\.room) }
}

extension ViewModelKind {
    /// The kind as `describe` answers it.
    var protocolDescription: KindDescription {
        KindDescription(name: name, scope: scope.rawValue,
                        actions: actions.map { KindDescription.Action(name: $0.name, arguments: $0.arguments) })
    }
}
