import TetherBinding
import TetherClient
import TetherJSON
import TetherProtocol

/// One client's view of one room, and what it saw happen: reconnects, versions going backwards,
/// gaps in the stream (a patch whose `from` is not the previous version), and forks (one epoch
/// and version seen with two different states).
@MainActor final class StreamObserver {
    let client: TetherClient
    let room: RemoteRoom
    var reconnects = 0
    var backwards: [String] = []
    var gaps: [String] = []
    var forks: [String] = []
    var highest: [String: Int] = [:]  // epoch -> highest version seen
    private var lastSeen: (epoch: String, version: Int)?
    private var states: [String: JSON] = [:]  // "epoch/version" -> state
    private var tokens: [Cancellable] = []

    init(client: TetherClient, room: RemoteRoom) {
        self.client = client
        self.room = room
        let name = room.name
        tokens.append(client.connectionState.observe { [unowned self] state in
            if case .reconnecting(attempt: 1, _) = state { self.reconnects += 1 }
        })
        client.onMessage = { [unowned self] message, _ in
            switch message {
            case .snapshot(name, let epoch, let version, _):
                self.lastSeen = (epoch, version)
            case .patch(name, let epoch, let from, let version, _):
                if let last = self.lastSeen, last.epoch == epoch, last.version != from {
                    self.gaps.append("\(epoch): at \(last.version), got \(from)->\(version)")
                }
                self.lastSeen = (epoch, version)
            default:
                break
            }
        }
        tokens.append(room.observeChanges { [unowned self] _ in
            guard let epoch = self.room.epoch, let version = self.room.version else { return }
            if let seen = self.highest[epoch], version < seen { self.backwards.append("\(epoch): \(seen) -> \(version)") }
            self.highest[epoch] = max(version, self.highest[epoch] ?? version)
            let key = "\(epoch)/\(version)"
            if let earlier = self.states[key], earlier != self.room.state {
                self.forks.append("\(key) seen with two states")
            }
            self.states[key] = self.room.state
        })
    }
}
