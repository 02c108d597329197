import Synchronization

/// Every socket shard's hub, in shard order, and what they share beyond the rooms: connections
/// per address (for `--max-connections-per-ip`) and the activity summary. Rooms deliver through
/// it (`HubOutput`): each shard gets, once per batch, what is for its own sessions.
///
/// The hubs are held weakly: each hub holds this, and the server (`TetherServer`, `TestServer`)
/// owns the hubs; a room that delivers after they are gone delivers to nobody.
final class HubShards: @unchecked Sendable {
    private struct WeakHub {
        weak var hub: SessionHub?
    }

    /// Appended to while the server is built, only read once it serves (the threading rule).
    private var weakHubs: [WeakHub] = []
    private let addressCounts = Mutex<[String: Int]>([:])
    let activity = Mutex(ActivityCounts())

    func add(_ hub: SessionHub) { weakHubs.append(WeakHub(hub: hub)) }

    /// The number of shards.
    var count: Int { weakHubs.count }

    /// Shard `index`'s hub, while it exists.
    func hub(_ index: Int) -> SessionHub? { weakHubs[index].hub }

    /// Every shard's hub that still exists, in shard order.
    var hubs: [SessionHub] { weakHubs.compactMap(\.hub) }

    /// Open connections of every shard, readable from any thread.
    var openConnections: Int { weakHubs.reduce(0) { $0 + ($1.hub?.shardConnections ?? 0) } }

    /// Counts a connection from `address`; returns how many are open from it now.
    func connectionOpened(from address: String) -> Int {
        addressCounts.withLock { counts in
            counts[address, default: 0] += 1
            return counts[address]!
        }
    }

    func connectionClosed(from address: String) {
        addressCounts.withLock { counts in
            let remaining = counts[address, default: 1] - 1
            counts[address] = remaining > 0 ? remaining : nil
        }
    }
}
