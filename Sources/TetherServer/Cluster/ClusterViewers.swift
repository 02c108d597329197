import TetherJSON
import TetherNATS
import TetherState

/// A viewer of one node's sessions, as that node announces it to a room's owner.
struct AnnouncedViewer: Sendable {
    var viewer: Viewer
    /// Whether the node may hold a projection of this viewer already (its sessions see more than
    /// the shared document): the owner then sends the viewer's projection whatever it is, instead
    /// of assuming the node holds none.
    var holds: Bool
}

/// Per-viewer values on a cluster (docs/CLUSTER.md, "Per-viewer values"): who the viewers of
/// each node's sessions are, announced on `tether.viewers.ROOM` (`NodeAnnouncements`, list key
/// `viewers`: `{"id", "claims", "holds"}` each). A viewer is one entry however many sessions it has
/// on a node. A node announces its list at once after a `sync`, which a node sends when it becomes
/// the room's owner.
///
/// Every node keeps the table, so an owner has it at once; only the owner acts on it (`onChange`,
/// feeding its `Room`). Confined to its `ClusteredRoom`'s executor.
final class ClusterViewers: @unchecked Sendable {
    private let node: ClusterNode
    private let subject: String
    /// This node's viewers now (`holds` as of their last announcement).
    private var local: [String: AnnouncedViewer] = [:]
    private var announcements: NodeAnnouncements<AnnouncedViewer>
    private var subscription: (any ClusterSubscription)?
    /// While this node owns the room: a node's viewers changed (`set`: added, or their claims
    /// changed; `removed`: ids gone).
    var onChange: ((_ node: String, _ set: [AnnouncedViewer], _ removed: [String]) -> Void)?
    /// What a heartbeat announces: this node's viewers, with whether each sees a projection now.
    private let currentViewers: () -> [AnnouncedViewer]

    init(room: String, node: ClusterNode, currentViewers: @escaping () -> [AnnouncedViewer]) {
        self.node = node
        self.currentViewers = currentViewers
        subject = "tether.viewers.\(node.token(room))"
        announcements = NodeAnnouncements(node: node.name, listKey: "viewers", id: \.viewer.id, same: { $0.viewer == $1.viewer },
                                          encode: Self.encode, decode: Self.decode)
    }

    /// Follows the room's subject (`receive` runs on the caller's queue).
    func start(_ receive: @escaping @Sendable (NATSMessage) -> Void) {
        subscription = try? node.messaging.subscribe(subject, handler: receive)
    }

    func stop() {
        subscription?.unsubscribe()
        subscription = nil
        onChange = nil
    }

    /// Every node's viewers (this one's included), as an owner starting out needs them.
    var all: [String: [AnnouncedViewer]] {
        var nodes = announcements.remote.mapValues { Array($0.entries.values) }
        nodes[node.name] = Array(local.values)
        return nodes
    }

    /// Asks every node to announce its viewers (an owner starting).
    func sync() {
        publish(announcements.sync)
    }

    // MARK: This node's sessions

    /// A viewer whose first session here subscribed.
    func add(_ viewer: AnnouncedViewer) {
        local[viewer.viewer.id] = viewer
        publish(announcements.set(viewer))
        onChange?(node.name, [viewer], [])
    }

    /// A viewer whose last session here left.
    func remove(_ viewer: Viewer) {
        guard local.removeValue(forKey: viewer.id) != nil else { return }
        publish(announcements.remove(viewer.id))
        onChange?(node.name, [], [viewer.id])
    }

    // MARK: Other nodes

    /// A message from the room's subject. A `set` or `remove` costs the same however many
    /// viewers the node has (a join storm must not cost each node n² work).
    func receive(_ message: NATSMessage, now: ContinuousClock.Instant) {
        guard let (change, syncAsked) = announcements.receive(message.data, now: now) else { return }
        if syncAsked { heartbeat() }
        if !change.isEmpty { onChange?(change.node, change.set, change.removed) }
    }

    /// Every heartbeat: this node's viewers for the others, and the viewers of nodes gone silent dropped.
    func tick(now: ContinuousClock.Instant) {
        heartbeat()
        for change in announcements.expire(now: now) { onChange?(change.node, [], change.removed) }
    }

    private func heartbeat() {
        let viewers = currentViewers()
        local = Dictionary(viewers.map { ($0.viewer.id, $0) }, uniquingKeysWith: { _, last in last })
        for message in announcements.heartbeat(viewers) { publish(message) }
    }

    private func publish(_ message: JSON) {
        try? node.messaging.publish(subject, message.encoded())
    }

    static func encode(_ viewer: AnnouncedViewer) -> JSON {
        var fields: [String: JSON] = ["id": .string(viewer.viewer.id), "claims": viewer.viewer.claims]
        if viewer.holds { fields["holds"] = true }
        return .object(fields)
    }

    static func decode(_ json: JSON) -> AnnouncedViewer? {
        guard let id = json["id"]?.stringValue else { return nil }
        return AnnouncedViewer(viewer: Viewer(id: id, claims: json["claims"] ?? .object([:])), holds: json["holds"]?.boolValue == true)
    }
}

/// On a cluster's owner, in its `Room`: the viewers of every node's sessions and, for each, the
/// projection that node's sessions hold as far as the owner knows. After every turn the owner
/// recomputes them and puts the changed ones (whole projections, not operations) in the log
/// beside the shared frame; each node turns them into its own sessions' operations.
struct ClusterProjections {
    /// node → viewer id → the viewer and what that node holds of their projection (nil: not
    /// known; the next step sends it whatever it is).
    private var nodes: [String: [String: (viewer: Viewer, held: [String: JSON]?)]] = [:]

    /// A node's viewers changed: new ones are assumed to hold nothing unless announced as holding
    /// something; known ones keep what they hold. Returns, like `update`, the projections to send
    /// to the viewers set (only theirs are computed: nothing else changed since the last turn).
    mutating func change(node: String, set: [AnnouncedViewer], removed: [String], _ project: (Viewer) -> [String: JSON]) -> JSON? {
        // Taken out while changed, so the dictionary is not copied.
        var viewers = nodes.removeValue(forKey: node) ?? [:]
        for id in removed { viewers[id] = nil }
        var changed: [String: JSON] = [:]
        for announced in set {
            let id = announced.viewer.id
            let held = viewers[id].map(\.held) ?? (announced.holds ? nil : [:])
            let now = project(announced.viewer)
            viewers[id] = (announced.viewer, now)
            if held != now { changed[id] = .object(now) }
        }
        if !viewers.isEmpty { nodes[node] = viewers }
        return changed.isEmpty ? nil : [node: .object(changed)]
    }

    /// After a turn: every announced viewer's projection now, and `{node: {viewerID: projection}}`
    /// of those that differ from what their node holds (nil when none does). A viewer on several
    /// nodes is computed once.
    mutating func update(_ project: (Viewer) -> [String: JSON]) -> JSON? {
        var computed: [Viewer: [String: JSON]] = [:]
        var changes: [String: JSON] = [:]
        for (node, viewers) in nodes {
            var changed: [String: JSON] = [:]
            for (id, entry) in viewers {
                let now: [String: JSON]
                if let known = computed[entry.viewer] {
                    now = known
                } else {
                    now = project(entry.viewer)
                    computed[entry.viewer] = now
                }
                guard entry.held != now else { continue }
                changed[id] = .object(now)
            }
            guard !changed.isEmpty else { continue }
            for (id, projection) in changed { nodes[node]![id]!.held = projection.objectValue }
            changes[node] = .object(changed)
        }
        return changes.isEmpty ? nil : .object(changes)
    }
}
