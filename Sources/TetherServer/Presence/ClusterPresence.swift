import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// A clustered room's presence (docs/CLUSTER.md, Presence): this node's document lists its own
/// sessions' members and the other nodes' ones, learnt over core NATS (no JetStream: presence is
/// never stored) on the room's subject `tether.presence.ROOM`:
///
/// - `{"node", "set": member}` and `{"node", "remove": id}` as this node's members change;
/// - `{"node", "members": [...]}` every `heartbeat` while the node has members in the room (the
///   whole list: it replaces what others knew of that node), and at once after a `{"node",
///   "sync": true}`, which a node sends when the room starts on it.
///
/// A node not heard for `silence` (killed, cut off) has its members removed. Confined to the
/// room's queue, like the rest of `ClusteredRoom` (hence `@unchecked Sendable`).
final class ClusterPresence: PresenceKeeping, @unchecked Sendable {
    static let heartbeat: Duration = .seconds(1)
    static let silence: Duration = .seconds(3)

    private(set) var document: RoomPresence
    private let node: ClusterNode
    private let subject: String
    /// The other nodes' members in this room, and when each node was last heard.
    private var remote: [String: (members: Set<String>, heard: ContinuousClock.Instant)] = [:]
    private var subscription: (any ClusterSubscription)?
    /// While this node owns the room: members listed or changed, and member ids unlisted, on
    /// any node (the owner's ViewModel sees them in `context.presence`).
    var onMemberChange: ((_ listed: [PresenceMember], _ left: [String]) -> Void)?

    init(room: String, node: ClusterNode, maxMembers: Int, window: Duration, clock: any ServerClock) {
        document = RoomPresence(room: room, maxMembers: maxMembers, window: window, clock: clock)
        self.node = node
        subject = "tether.presence.\(node.token(room))"
    }

    /// Follows the room's subject (`receive` runs on the caller's queue) and asks the others for their members.
    func start(_ receive: @escaping @Sendable (NATSMessage) -> Void) {
        subscription = try? node.messaging.subscribe(subject, handler: receive)
        publish(["sync": true])
    }

    func stop() {
        subscription?.unsubscribe()
        subscription = nil
        document.stop()
        onMemberChange = nil
    }

    // MARK: This node's sessions

    // Each returns, as `RoomPresence` does, what changed in the document.

    /// A local join's presence (`RoomPresence.join`): only members are published, never spectators.
    func join(_ session: SessionHandle, _ join: PresenceJoin?) -> (listed: PresenceMember?, left: String?) {
        let (listed, left) = document.join(session, join)
        if let left { publish(["remove": .string(left)]) }
        if let listed { publish(["set": Self.encode(listed)]) }
        if listed != nil || left != nil { onMemberChange?(listed.map { [$0] } ?? [], left.map { [$0] } ?? []) }
        return (listed, left)
    }

    func update(_ session: SessionHandle, data: JSON) -> PresenceMember? {
        guard let listed = document.update(session, data: data) else { return nil }
        publish(["set": Self.encode(listed)])
        onMemberChange?([listed], [])
        return listed
    }

    func remove(_ session: SessionHandle) -> String? {
        guard let left = document.remove(session) else { return nil }
        publish(["remove": .string(left)])
        onMemberChange?([], [left])
        return left
    }

    func isListed(_ session: SessionHandle) -> Bool { document.isListed(session) }
    func isListening(_ session: SessionHandle) -> Bool { document.isListening(session) }
    var memberCount: Int { document.members.count }

    func snapshot(for session: SessionHandle) -> [UInt8] { document.snapshot(for: session) }

    func deliveriesAfterChange(windowEnded: @escaping @Sendable () -> Void) -> [RoomDelivery] {
        document.deliveriesAfterChange(windowEnded: windowEnded)
    }

    func flush() -> [RoomDelivery] { document.flush() }

    // MARK: Other nodes

    /// A message from the room's subject: whether it changed the document.
    func receive(_ message: NATSMessage, now: ContinuousClock.Instant) -> Bool {
        guard let json = try? JSONParser().parse(message.data), let from = json["node"]?.stringValue, from != node.name else { return false }
        var changes = Changes()
        var known = remote[from]?.members ?? []
        if let member = json["set"].flatMap(Self.decode) {
            known.insert(member.id)
            changes.upsert(member, in: &document)
        } else if let id = json["remove"]?.stringValue {
            known.remove(id)
            changes.remove(id, from: &document)
        } else if let list = json["members"]?.arrayValue {
            let members = list.compactMap(Self.decode)
            let ids = Set(members.map(\.id))
            for id in known.subtracting(ids) { changes.remove(id, from: &document) }
            for member in members { changes.upsert(member, in: &document) }
            known = ids
        } else if json["sync"]?.boolValue == true {
            heartbeat()
        }
        remote[from] = (known, now)
        return report(changes)
    }

    /// Every `heartbeat`: this node's members for the others, and the members of nodes gone
    /// silent removed (whether that changed the document).
    func tick(now: ContinuousClock.Instant) -> Bool {
        heartbeat()
        var changes = Changes()
        for (name, entry) in remote where now - entry.heard > Self.silence {
            for id in entry.members { changes.remove(id, from: &document) }
            remote[name] = nil
        }
        return report(changes)
    }

    /// What other nodes' messages changed: the members for the owner's ViewModel.
    private struct Changes {
        var listed: [PresenceMember] = []
        var left: [String] = []

        mutating func upsert(_ member: PresenceMember, in document: inout RoomPresence) {
            if document.upsert(member) { listed.append(member) }
        }

        mutating func remove(_ id: String, from document: inout RoomPresence) {
            if document.remove(memberID: id) { left.append(id) }
        }
    }

    /// Tells the owner's ViewModel; whether the document changed.
    private func report(_ changes: Changes) -> Bool {
        guard !changes.listed.isEmpty || !changes.left.isEmpty else { return false }
        onMemberChange?(changes.listed, changes.left)
        return true
    }

    private func heartbeat() {
        let members = document.localMembers
        guard !members.isEmpty else { return }
        publish(["members": .array(members.map(Self.encode))])
    }

    private func publish(_ fields: [String: JSON]) {
        var message = fields
        message["node"] = .string(node.name)
        try? node.messaging.publish(subject, JSON.object(message).encoded())
    }

    static func encode(_ member: PresenceMember) -> JSON {
        ["id": .string(member.id), "user": .string(member.user), "data": member.data]
    }

    static func decode(_ json: JSON) -> PresenceMember? {
        guard let id = json["id"]?.stringValue, let user = json["user"]?.stringValue, case .object? = json["data"] else { return nil }
        return PresenceMember(id: id, user: user, data: json["data"]!)
    }
}
