import TetherJSON
import TetherProtocol
import TetherState

/// What a join brings to a room's presence: the member it adds (the hub fills in the identity).
struct PresenceJoin: Sendable {
    let member: PresenceMember
}

/// A room's presence document (docs/DESIGN.md, Presence): member id → `{"user", "data"}`, with
/// its own version counting from 0 for the room's life in this process. Never persisted and
/// never in the room's patch history: a client that comes back gets a fresh snapshot.
/// Lives on the room's executor, beside the room's state.
struct RoomPresence {
    let room: String
    /// At most this many members (`--max-presence-members`): past it a join with presence is an
    /// ordinary join (no stream, not listed), so one crowded room can't make every join cost a
    /// frame per member without bound.
    let maxMembers: Int
    private(set) var version = 0
    private(set) var members: [String: PresenceMember] = [:]
    /// The sessions listed (and so receiving the stream), and the member id of each.
    private var memberIDs: [SessionHandle: String] = [:]
    /// The same sessions as an array, so a broadcast shares it; kept in step as in `Room`.
    private(set) var listeners: [SessionHandle] = []
    private var listenerIndex: [SessionHandle: Int] = [:]

    init(room: String, maxMembers: Int) {
        self.room = room
        self.maxMembers = maxMembers
    }

    var isFull: Bool { members.count >= maxMembers }

    func isListed(_ session: SessionHandle) -> Bool { memberIDs[session] != nil }

    /// The whole document as a `presence` frame.
    var snapshotFrame: [UInt8] {
        ServerMessage.presence(room: room, version: version, members: .object(members.mapValues(\.json))).encoded()
    }

    /// Lists `session` as `member` (or replaces its data if listed already); returns the change
    /// as a `presence_patch` frame for the listeners before it, nil when nothing changed.
    mutating func add(_ session: SessionHandle, _ member: PresenceMember) -> [UInt8]? {
        if let id = memberIDs[session], let current = members[id] {
            return update(session, data: member.data, current: current)
        }
        memberIDs[session] = member.id
        listenerIndex[session] = listeners.count
        listeners.append(session)
        return upsert(member)
    }

    /// Lists a member that has no session here (one on another cluster node), or replaces its data.
    mutating func upsert(_ member: PresenceMember) -> [UInt8]? {
        if let current = members[member.id] {
            guard current.data != member.data else { return nil }
            members[member.id] = member
            return step([.replace(path: JSONPointer(tokens: [member.id, "data"]), value: member.data)])
        }
        members[member.id] = member
        return step([.add(path: JSONPointer(tokens: [member.id]), value: member.json)])
    }

    /// Unlists a member that has no session here.
    mutating func remove(memberID id: String) -> [UInt8]? {
        guard members.removeValue(forKey: id) != nil else { return nil }
        return step([.remove(path: JSONPointer(tokens: [id]))])
    }

    /// The members listed for this node's sessions.
    var localMembers: [PresenceMember] { memberIDs.values.compactMap { members[$0] } }

    /// Replaces the listed session's data; nil when it is not listed or the data is the same.
    mutating func update(_ session: SessionHandle, data: JSON) -> [UInt8]? {
        guard let id = memberIDs[session], let current = members[id] else { return nil }
        return update(session, data: data, current: current)
    }

    private mutating func update(_ session: SessionHandle, data: JSON, current: PresenceMember) -> [UInt8]? {
        guard current.data != data else { return nil }
        var member = current
        member.data = data
        members[member.id] = member
        return step([.replace(path: JSONPointer(tokens: [member.id, "data"]), value: data)])
    }

    /// Unlists `session`: the removed member and the change, or nil if it was not listed.
    mutating func remove(_ session: SessionHandle) -> (memberID: String, frame: [UInt8])? {
        guard let id = memberIDs.removeValue(forKey: session), let index = listenerIndex.removeValue(forKey: session) else { return nil }
        let last = listeners.removeLast()
        if index < listeners.count {
            listeners[index] = last
            listenerIndex[last] = index
        }
        members[id] = nil
        return (id, step([.remove(path: JSONPointer(tokens: [id]))]))
    }

    func member(of session: SessionHandle) -> PresenceMember? {
        memberIDs[session].flatMap { members[$0] }
    }

    /// One version step, encoded once for every listener.
    private mutating func step(_ operations: [PatchOperation]) -> [UInt8] {
        version += 1
        return ServerMessage.presencePatch(room: room, from: version - 1, version: version, operations: operations).encoded()
    }
}
