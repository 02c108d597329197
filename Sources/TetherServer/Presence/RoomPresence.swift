import OrderedCollections
import TetherJSON
import TetherProtocol
import TetherState

/// What a join asks of a room's presence (the hub fills in the member's identity).
enum PresenceJoin: Sendable {
    /// Be listed as this member, and get the stream.
    case member(PresenceMember)
    /// Get the stream without being listed (a spectator): never in the document, so never in the
    /// ViewModel's `context.presence` nor counted against the maximum of members.
    case spectator
}

/// Who is in a room, as a node's followers keep it (`RoomFollowers`): on one node the room's
/// `RoomPresence` itself; on a cluster `ClusterPresence`, the same document with the other nodes'
/// members in it, which tells them of this node's changes.
protocol PresenceKeeping {
    func isListed(_ session: SessionHandle) -> Bool
    func isListening(_ session: SessionHandle) -> Bool
    var memberCount: Int { get }
    /// A join's presence (`RoomPresence.join`): the member listed, the member id unlisted.
    mutating func join(_ session: SessionHandle, _ join: PresenceJoin?) -> (listed: PresenceMember?, left: String?)
    /// The member as updated; nil when nothing changed.
    mutating func update(_ session: SessionHandle, data: JSON) -> PresenceMember?
    /// The member id unlisted, if the session was listed.
    mutating func remove(_ session: SessionHandle) -> String?
    mutating func snapshot(for session: SessionHandle) -> [UInt8]
    mutating func deliveriesAfterChange(windowEnded: @escaping @Sendable () -> Void) -> [RoomDelivery]
    mutating func flush() -> [RoomDelivery]
    mutating func stop()
}

extension RoomPresence: PresenceKeeping {
    var memberCount: Int { members.count }
}

/// A room's presence document (docs/DESIGN.md, Presence): member id → `{"user", "data"}`, with
/// its own version counting from 0 for the room's life in this process. Never persisted and
/// never in the room's patch history: a client that comes back gets a fresh snapshot. Its
/// listeners are the members' sessions and the spectators', which get the stream without being in it.
/// Lives on the room's executor (or a clustered room's queue), beside the room's state.
///
/// Changes are coalesced over a window (`--presence-window-seconds`): the first change starts
/// it, and its end sends every change since as one `presence_patch`, so n members churning cost
/// each listener one frame per window instead of one per change. A member arriving meanwhile
/// gets a snapshot at once (with itself and the window's changes so far in it): the changes
/// before its snapshot become a version step of their own, and at the window's end each
/// listener gets one frame from the version it holds. Without a window every change goes out
/// as it happens.
struct RoomPresence {
    let room: String
    /// At most this many members (`--max-presence-members`): past it a join with presence is an
    /// ordinary join (no stream, not listed), so one crowded room can't make every join cost a
    /// frame per member without bound.
    let maxMembers: Int
    /// The newest version step (what a snapshot taken now carries, once `seal()` has run).
    private(set) var version = 0
    private(set) var members: [String: PresenceMember] = [:]
    /// The sessions listed, and the member id of each.
    private var memberIDs: [SessionHandle: String] = [:]
    /// The sessions receiving the stream (the listed ones and the spectators), as an array so a
    /// broadcast shares it; kept in step as in `Room`.
    private(set) var listeners: [SessionHandle] = []
    private var listenerIndex: [SessionHandle: Int] = [:]

    /// Members changed since `version`, in the order they first changed, each with its value at `version`.
    private var changedSince: OrderedDictionary<String, PresenceMember?> = [:]
    /// Version steps made since the listeners were last sent one, oldest first.
    private var steps: [(from: Int, operations: [PatchOperation])] = []
    /// The version every listener holds, except those that got a snapshot since (`joined`).
    private var sentVersion = 0
    private var joined: [SessionHandle: Int] = [:]
    private var snapshotCache: (version: Int, frame: [UInt8])?

    private let window: Duration
    private let clock: any ServerClock
    private var windowTimer: (any ServerTimer)?

    init(room: String, maxMembers: Int, window: Duration, clock: any ServerClock) {
        self.room = room
        self.maxMembers = maxMembers
        self.window = window
        self.clock = clock
    }

    private var isFull: Bool { members.count >= maxMembers }

    func isListed(_ session: SessionHandle) -> Bool { memberIDs[session] != nil }

    /// Whether `session` gets the stream: listed, or a spectator.
    func isListening(_ session: SessionHandle) -> Bool { listenerIndex[session] != nil }

    func member(of session: SessionHandle) -> PresenceMember? {
        memberIDs[session].flatMap { members[$0] }
    }

    /// The members listed for this node's sessions.
    var localMembers: [PresenceMember] { memberIDs.values.compactMap { members[$0] } }

    // MARK: Changes

    /// A join's presence: lists `session` as a member (or replaces its data), makes it a
    /// spectator (unlisting it if it was a member), or, for a join without presence or past the
    /// maximum of members, neither: its stream stops. Returns the member listed or changed, and
    /// the id of the member unlisted.
    mutating func join(_ session: SessionHandle, _ join: PresenceJoin?) -> (listed: PresenceMember?, left: String?) {
        switch join {
        case .member(let member) where isListed(session) || !isFull:
            return (add(session, member) ? self.member(of: session) : nil, nil)
        case .spectator:
            listen(session)
            return (nil, unlist(session))
        default:
            return (nil, remove(session))
        }
    }

    /// Lists `session` as `member`, or replaces its data if listed already; whether the document changed.
    private mutating func add(_ session: SessionHandle, _ member: PresenceMember) -> Bool {
        if let id = memberIDs[session], let current = members[id] {
            return set(PresenceMember(id: current.id, user: current.user, data: member.data))
        }
        memberIDs[session] = member.id
        listen(session)
        return set(member)
    }

    /// Lists a member that has no session here (one on another cluster node), or replaces its data.
    mutating func upsert(_ member: PresenceMember) -> Bool {
        set(member)
    }

    /// Replaces the listed session's data: the member as it is now, nil when it is not listed
    /// or the data is the same.
    @discardableResult
    mutating func update(_ session: SessionHandle, data: JSON) -> PresenceMember? {
        guard var member = member(of: session) else { return nil }
        member.data = data
        return set(member) ? member : nil
    }

    /// Stops `session`'s stream and unlists it: the id of the member it was, nil if it was not listed.
    mutating func remove(_ session: SessionHandle) -> String? {
        if let index = listenerIndex.removeValue(forKey: session) {
            let last = listeners.removeLast()
            if index < listeners.count {
                listeners[index] = last
                listenerIndex[last] = index
            }
            joined[session] = nil
        }
        return unlist(session)
    }

    private mutating func listen(_ session: SessionHandle) {
        guard listenerIndex[session] == nil else { return }
        listenerIndex[session] = listeners.count
        listeners.append(session)
    }

    /// Removes `session`'s member, if it has one (its stream goes on): the member's id.
    private mutating func unlist(_ session: SessionHandle) -> String? {
        guard let id = memberIDs.removeValue(forKey: session) else { return nil }
        _ = remove(memberID: id)
        return id
    }

    /// Unlists a member that has no session here.
    mutating func remove(memberID id: String) -> Bool {
        guard let current = members[id] else { return false }
        touch(id, was: current)
        members[id] = nil
        return true
    }

    private mutating func set(_ member: PresenceMember) -> Bool {
        let current = members[member.id]
        guard current != member else { return false }
        touch(member.id, was: current)
        members[member.id] = member
        return true
    }

    private mutating func touch(_ id: String, was: PresenceMember?) {
        if changedSince[id] == nil { changedSince[id] = .some(was) }
    }

    // MARK: Frames

    /// `session`'s snapshot, at a version that includes every change so far; a listening session
    /// then gets the changes after it.
    mutating func snapshot(for session: SessionHandle) -> [UInt8] {
        seal()
        if isListening(session) { joined[session] = version }
        if let cached = snapshotCache, cached.version == version { return cached.frame }
        let frame = ServerMessage.presence(room: room, version: version, members: .object(members.mapValues(\.json))).encoded()
        snapshotCache = (version, frame)
        return frame
    }

    /// After a change: what to send now (everything, without a window), or nothing while the
    /// window gathers changes. The first change of a window starts its timer, and
    /// `windowEnded` runs when it ends, to call `flush()`.
    mutating func deliveriesAfterChange(windowEnded: @escaping @Sendable () -> Void) -> [RoomDelivery] {
        guard window > .zero else { return flush() }
        if windowTimer == nil { windowTimer = clock.startTimer(every: window, windowEnded) }
        return []
    }

    /// Every change not yet sent, as one `presence_patch` per version a listener holds (most
    /// hold the same one: one frame, encoded once, for all of them).
    mutating func flush() -> [RoomDelivery] {
        windowTimer?.cancel()
        windowTimer = nil
        seal()
        defer {
            steps.removeAll()
            joined.removeAll()
            sentVersion = version
        }
        guard version > sentVersion else { return [] }
        var deliveries: [RoomDelivery] = []
        let others = joined.isEmpty ? listeners : listeners.filter { joined[$0] == nil }
        if !others.isEmpty { deliveries.append(.presence(frame(from: sentVersion), room: room, to: others)) }
        for (from, sessions) in Dictionary(grouping: joined.keys, by: { joined[$0]! }).sorted(by: { $0.key < $1.key }) where from < version {
            deliveries.append(.presence(frame(from: from), room: room, to: sessions))
        }
        return deliveries
    }

    /// Stops the window's timer (the room is stopping).
    mutating func stop() {
        windowTimer?.cancel()
        windowTimer = nil
    }

    /// Makes the changes since `version` one version step.
    private mutating func seal() {
        guard !changedSince.isEmpty else { return }
        var operations: [PatchOperation] = []
        for (id, was) in changedSince {
            let path = JSONPointer(tokens: [id])
            switch (was, members[id]) {
            case let (nil, now?): operations.append(.add(path: path, value: now.json))
            case (_?, nil): operations.append(.remove(path: path))
            case let (was?, now?) where was.user == now.user && was.data != now.data:
                operations.append(.replace(path: JSONPointer(tokens: [id, "data"]), value: now.data))
            case let (was?, now?) where was != now: operations.append(.replace(path: path, value: now.json))
            default: break
            }
        }
        changedSince.removeAll()
        guard !operations.isEmpty else { return }
        steps.append((version, operations))
        version += 1
    }

    /// The steps after `from` as one frame.
    private func frame(from: Int) -> [UInt8] {
        let operations = steps.filter { $0.from >= from }.flatMap(\.operations)
        return ServerMessage.presencePatch(room: room, from: from, version: version, operations: operations).encoded()
    }
}
