import TetherBinding
import TetherJSON
import TetherState

/// The server's own rooms. Kind names starting with `tether.` are reserved for them: an
/// application cannot register one, and they have no instances (`tether.server:x` is unknown).
enum SystemRoom {
    static let prefix = "tether."
    /// The overview the dashboard shows: `ServerStatusRoom`.
    static let serverStatus = "tether.server"

    static func isSystemKind(_ name: String) -> Bool { name.hasPrefix(prefix) }

    /// The kinds every server has, reading `board`.
    static func kinds(board: ServerStatusBoard) -> [ViewModelKind] {
        [ViewModelKind(serverStatus, scope: .shared, ServerStatusRoom.self) { context in
            ServerStatusRoom(context: context, board: board)
        }]
    }
}

/// `tether.server`: the server as a document, refreshed once a second by the room's timer from
/// the `ServerStatusBoard`. A ViewModel like any other, so the dashboard is a plain Tether client.
///
/// ```json
/// {"server": {"name", "version", "startedAt", "uptimeSeconds", "node", "listen", "tls", "auth",
///             "durability", "storage": {"kind", "path", "bytes"}},
///  "connections": 4, "rooms": 3,
///  "rates": {"deliveriesPerSecond", "actionsPerSecond", "bytesOutPerSecond"},
///  "recent": [{"t", "connections", "deliveries", "actions"}, ...],   // one a second, 300 s
///  "roomList": [{"name", "kind", "scope", "subscribers", "version", "epoch", "members"} or, per-session,
///               {"name", "kind", "scope", "subscribers", "instances"}, ...],   // by name, 500 at most
///  "roomListTruncated": false, "nodes": [],
///  "webhooks": [{"name", "url", "events", "rooms", "pending", "dead", "disabled", "lastError"?, "lastErrorAt"?}]}
/// ```
///
/// Each second's patch touches only what changed: the uptime, the rates, one sample appended
/// (and the oldest removed), the fields of room entries that changed.
final class ServerStatusRoom: ViewModel {
    /// The overview describes the daemon; who watches it is nobody else's business.
    static let hasPresence = false
    static let actions = ActionTable<ServerStatusRoom>()

    private let board: ServerStatusBoard
    private let server: ObservableMap<String, JSON>
    private let connections: Observable<Int>
    private let rooms: Observable<Int>
    private let rates: Observable<ServerStatusBoard.Rates>
    private let recent: ObservableList<ServerStatusBoard.Sample>
    private let roomList: ObservableList<RoomListEntry>
    private let roomListTruncated: Observable<Bool>
    /// The cluster's nodes; empty on a single daemon.
    private let nodes: Observable<[JSON]>
    /// The webhook endpoints and their queues; empty when none is configured.
    private let webhooks: Observable<[JSON]>

    required init(context: ViewModelContext) {
        preconditionFailure("tether.server is built by the server with its status board (SystemRoom.kinds)")
    }

    init(context: ViewModelContext, board: ServerStatusBoard) {
        self.board = board
        let (record, server, _, webhooks) = board.current()
        self.server = context.map("server", server)
        connections = context.property("connections", record.connections)
        rooms = context.property("rooms", record.rooms)
        rates = context.property("rates", record.rates)
        recent = context.list("recent", record.recent)
        roomList = context.list("roomList", record.roomList)
        roomListTruncated = context.property("roomListTruncated", record.roomListTruncated)
        nodes = context.property("nodes", [JSON]())
        self.webhooks = context.property("webhooks", webhooks)
        context.every(.seconds(1)) { [unowned self] in self.refresh() }
    }

    /// One tick: everything that changed since the last becomes this turn's patch.
    private func refresh() {
        let (record, server, nodes, webhooks) = board.current()
        for (key, value) in server where self.server[key] != value { self.server[key] = value }
        connections.value = record.connections
        rooms.value = record.rooms
        rates.value = record.rates
        let newest = recent.last?.t ?? .min
        for sample in record.recent where sample.t > newest { recent.append(sample) }
        while recent.count > ServerStatusBoard.recentSeconds { recent.remove(at: 0) }
        Self.merge(record.roomList, into: roomList)
        roomListTruncated.value = record.roomListTruncated
        if self.nodes.value != nodes { self.nodes.value = nodes }
        if self.webhooks.value != webhooks { self.webhooks.value = webhooks }
    }

    /// Turns `list` into `target` (both sorted by name) by removing, inserting and updating
    /// entries, so a patch carries only the entries, and fields, that changed.
    static func merge(_ target: [RoomListEntry], into list: ObservableList<RoomListEntry>) {
        var index = 0
        for entry in target {
            while index < list.count, list[index].name < entry.name { list.remove(at: index) }
            if index < list.count, list[index].name == entry.name {
                if list[index] != entry { list.update(at: index) { $0 = entry } }
            } else {
                list.insert(entry, at: index)
            }
            index += 1
        }
        while list.count > index { list.remove(at: index) }
    }
}
