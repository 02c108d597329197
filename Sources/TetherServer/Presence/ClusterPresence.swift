import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// A clustered room's presence (docs/CLUSTER.md, Presence): this node's document lists its own
/// sessions' members and the other nodes' ones, announced on `tether.presence.ROOM`
/// (`NodeAnnouncements`, list key `members`; never stored). A node asks the others for their
/// members (`sync`) when the room starts on it. Confined to its `ClusteredRoom`'s executor.
final class ClusterPresence: PresenceKeeping, @unchecked Sendable {
    private(set) var document: RoomPresence
    private let node: ClusterNode
    private let subject: String
    private var announcements: NodeAnnouncements<PresenceMember>
    private var subscription: (any ClusterSubscription)?
    /// While this node owns the room: members listed or changed, and member ids unlisted, on
    /// any node (the owner's ViewModel sees them in `context.presence`).
    var onMemberChange: ((_ listed: [PresenceMember], _ left: [String]) -> Void)?

    init(room: String, node: ClusterNode, maxMembers: Int, window: Duration, clock: any ServerClock) {
        document = RoomPresence(room: room, maxMembers: maxMembers, window: window, clock: clock)
        self.node = node
        subject = "tether.presence.\(node.token(room))"
        announcements = NodeAnnouncements(node: node.name, listKey: "members", id: \.id, same: { _, _ in false },
                                          encode: Self.encode, decode: Self.decode)
    }

    /// Follows the room's subject (`receive` runs on the caller's queue) and asks the others for their members.
    func start(_ receive: @escaping @Sendable (NATSMessage) -> Void) {
        subscription = try? node.messaging.subscribe(subject, handler: receive)
        publish(announcements.sync)
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
        if let left { publish(announcements.remove(left)) }
        if let listed { publish(announcements.set(listed)) }
        if listed != nil || left != nil { onMemberChange?(listed.map { [$0] } ?? [], left.map { [$0] } ?? []) }
        return (listed, left)
    }

    func update(_ session: SessionHandle, data: JSON) -> PresenceMember? {
        guard let listed = document.update(session, data: data) else { return nil }
        publish(announcements.set(listed))
        onMemberChange?([listed], [])
        return listed
    }

    func remove(_ session: SessionHandle) -> String? {
        guard let left = document.remove(session) else { return nil }
        publish(announcements.remove(left))
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

    /// A message from the room's subject: whether it changed the document. (Members are compared
    /// by the document, which knows whether an upsert changed anything.)
    func receive(_ message: NATSMessage, now: ContinuousClock.Instant) -> Bool {
        guard let (change, syncAsked) = announcements.receive(message.data, now: now) else { return false }
        if syncAsked { heartbeat() }
        return apply([change])
    }

    /// Every heartbeat: this node's members for the others, and the members of nodes gone
    /// silent removed (whether that changed the document).
    func tick(now: ContinuousClock.Instant) -> Bool {
        heartbeat()
        return apply(announcements.expire(now: now))
    }

    /// Applies other nodes' changes to the document and tells the owner's ViewModel; whether the
    /// document changed.
    private func apply(_ changes: [NodeAnnouncements<PresenceMember>.Change]) -> Bool {
        var listed: [PresenceMember] = []
        var left: [String] = []
        for change in changes {
            for id in change.removed where document.remove(memberID: id) { left.append(id) }
            for member in change.set where document.upsert(member) { listed.append(member) }
        }
        guard !listed.isEmpty || !left.isEmpty else { return false }
        onMemberChange?(listed, left)
        return true
    }

    private func heartbeat() {
        for message in announcements.heartbeat(document.localMembers) { publish(message) }
    }

    private func publish(_ message: JSON) {
        try? node.messaging.publish(subject, message.encoded())
    }

    static func encode(_ member: PresenceMember) -> JSON {
        ["id": .string(member.id), "user": .string(member.user), "data": member.data]
    }

    static func decode(_ json: JSON) -> PresenceMember? {
        guard let id = json["id"]?.stringValue, let user = json["user"]?.stringValue, case .object? = json["data"] else { return nil }
        return PresenceMember(id: id, user: user, data: json["data"]!)
    }
}
