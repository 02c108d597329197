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
/// each node's sessions are, shared over core NATS (never stored) on `tether.viewers.ROOM`:
///
/// - `{"node", "set": {"id", "claims", "holds"}}` and `{"node", "remove": id}` as this node's
///   viewers come and go (a viewer is one entry however many sessions it has here);
/// - `{"node", "viewers": [...], "beat", "part", "parts"}` every `heartbeat` while the node has
///   viewers (the whole list, in parts of at most `maxPartBytes` so a crowded node stays under
///   NATS's message size; once all parts of a beat arrived the list replaces what others knew of
///   that node), and at once after a `{"node", "sync": true}`, which a node sends when it becomes
///   the room's owner.
///
/// A node not heard for `silence` has its viewers dropped. Every node keeps the table, so an
/// owner has it at once; only the owner acts on it (`onChange`, feeding its `Room`). Confined to
/// the room's queue, like the rest of `ClusteredRoom` (hence `@unchecked Sendable`).
final class ClusterViewers: @unchecked Sendable {
    static let heartbeat: Duration = ClusterPresence.heartbeat
    static let silence: Duration = ClusterPresence.silence
    /// A heartbeat's list is split into messages of about this size (NATS's default limit is 1 MiB).
    static let maxPartBytes = 256 << 10

    private let node: ClusterNode
    private let subject: String
    /// This node's viewers now (`holds` as of their last announcement).
    private var local: [String: AnnouncedViewer] = [:]
    /// The other nodes' viewers, and when each node was last heard.
    private var remote: [String: (viewers: [String: AnnouncedViewer], heard: ContinuousClock.Instant)] = [:]
    /// Other nodes' heartbeats in parts.
    private var parts = HeartbeatParts()
    private var beat = 0
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
        var nodes = remote.mapValues { Array($0.viewers.values) }
        nodes[node.name] = Array(local.values)
        return nodes
    }

    /// Asks every node to announce its viewers (an owner starting).
    func sync() {
        publish(["sync": true])
    }

    // MARK: This node's sessions

    /// A viewer whose first session here subscribed.
    func add(_ viewer: AnnouncedViewer) {
        local[viewer.viewer.id] = viewer
        publish(["set": Self.encode(viewer)])
        onChange?(node.name, [viewer], [])
    }

    /// A viewer whose last session here left.
    func remove(_ viewer: Viewer) {
        guard local.removeValue(forKey: viewer.id) != nil else { return }
        publish(["remove": .string(viewer.id)])
        onChange?(node.name, [], [viewer.id])
    }

    // MARK: Other nodes

    /// A message from the room's subject. A `set` or `remove` costs the same however many
    /// viewers the node has (a join storm must not cost each node n² work).
    func receive(_ message: NATSMessage, now: ContinuousClock.Instant) {
        guard let json = try? JSONParser().parse(message.data), let from = json["node"]?.stringValue, from != node.name else { return }
        // Taken out while changed, so the dictionary is not copied.
        var viewers = remote.removeValue(forKey: from)?.viewers ?? [:]
        var set: [AnnouncedViewer] = []
        var removed: [String] = []
        if let viewer = json["set"].flatMap(Self.decode) {
            if viewers.updateValue(viewer, forKey: viewer.viewer.id)?.viewer != viewer.viewer { set.append(viewer) }
        } else if let id = json["remove"]?.stringValue {
            if viewers.removeValue(forKey: id) != nil { removed.append(id) }
        } else if let list = json["viewers"]?.arrayValue,
                  let complete = parts.receive(list.compactMap(Self.decode), from: from, beat: json["beat"]?.intValue ?? 0,
                                               parts: json["parts"]?.intValue ?? 1) {
            let listed = Dictionary(complete.map { ($0.viewer.id, $0) }, uniquingKeysWith: { _, last in last })
            set = listed.values.filter { viewers[$0.viewer.id]?.viewer != $0.viewer }
            removed = viewers.keys.filter { listed[$0] == nil }
            viewers = listed
        } else if json["sync"]?.boolValue == true {
            heartbeat()
        }
        remote[from] = (viewers, now)
        if !set.isEmpty || !removed.isEmpty { onChange?(from, set, removed) }
    }

    /// Every `heartbeat`: this node's viewers for the others, and the viewers of nodes gone silent dropped.
    func tick(now: ContinuousClock.Instant) {
        heartbeat()
        for (name, entry) in remote where now - entry.heard > Self.silence {
            remote[name] = nil
            if !entry.viewers.isEmpty { onChange?(name, [], Array(entry.viewers.keys)) }
        }
    }

    private func heartbeat() {
        let viewers = currentViewers()
        local = Dictionary(viewers.map { ($0.viewer.id, $0) }, uniquingKeysWith: { _, last in last })
        guard !viewers.isEmpty else { return }
        beat += 1
        let chunks = Self.split(viewers.map(Self.encode), maxBytes: Self.maxPartBytes)
        for (index, chunk) in chunks.enumerated() {
            publish(["viewers": .array(chunk), "beat": .int(beat), "part": .int(index), "parts": .int(chunks.count)])
        }
    }

    /// `entries` in consecutive parts of at most `maxBytes` encoded (an entry larger than that alone).
    static func split(_ entries: [JSON], maxBytes: Int) -> [[JSON]] {
        var chunks: [[JSON]] = [[]]
        var bytes = 0
        for entry in entries {
            let size = entry.encoded().count + 1
            if bytes + size > maxBytes, !chunks[chunks.count - 1].isEmpty {
                chunks.append([])
                bytes = 0
            }
            chunks[chunks.count - 1].append(entry)
            bytes += size
        }
        return chunks
    }

    private func publish(_ fields: [String: JSON]) {
        var message = fields
        message["node"] = .string(node.name)
        try? node.messaging.publish(subject, JSON.object(message).encoded())
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

/// Other nodes' heartbeat lists arriving in parts: a node's list is whole once every part of one
/// beat arrived (a part lost with core NATS leaves that beat incomplete; the next one replaces it).
struct HeartbeatParts {
    private var pending: [String: (beat: Int, viewers: [AnnouncedViewer], received: Int)] = [:]

    /// One part from `node`: the node's whole list when it completes its beat, else nil.
    mutating func receive(_ viewers: [AnnouncedViewer], from node: String, beat: Int, parts: Int) -> [AnnouncedViewer]? {
        guard parts > 1 else { return viewers }
        var entry = pending.removeValue(forKey: node) ?? (beat, [], 0)
        if entry.beat != beat { entry = (beat, [], 0) }
        entry.viewers += viewers
        entry.received += 1
        guard entry.received == parts else {
            pending[node] = entry
            return nil
        }
        return entry.viewers
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
