import Synchronization

/// Every socket shard's hub, in shard order, and what they share beyond the rooms: connections
/// per address (for `--max-connections-per-ip`) and the activity summary. Rooms deliver through
/// it (`HubOutput`): each shard gets, once per batch, what is for its own sessions.
final class HubShards: @unchecked Sendable {
    /// Appended to while the server is built, only read once it serves (the threading rule).
    private(set) var hubs: [SessionHub] = []
    private let addressCounts = Mutex<[String: Int]>([:])
    let activity = Mutex(ActivityCounts())

    func add(_ hub: SessionHub) { hubs.append(hub) }

    /// Open connections of every shard, readable from any thread.
    var openConnections: Int { hubs.reduce(0) { $0 + $1.shardConnections } }

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
