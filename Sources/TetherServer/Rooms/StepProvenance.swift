import TetherJSON
import TetherProtocol
import TetherState

/// What made a version step, who and when: stored with the step (its patch row, in the same
/// transaction), shown to admins by `GET /rooms/{room}/history` and `tether history`.
/// Never sent to the room's clients.
struct StepProvenance: Sendable, Equatable {
    enum Cause: Sendable, Equatable {
        /// An action that applied.
        case action(String)
        /// An action that failed: its turn was taken back, yet a viewer's own values changed.
        case refusedAction(String)
        /// One of the ViewModel's timers (also the ticks a room runs when it starts again).
        case timer(Int)
        /// The ViewModel's reaction to members listed or leaving.
        case presence
        /// On a cluster's owner: another node's viewers, whose own values go out in an empty step.
        case viewers
    }

    var cause: Cause
    /// The viewer of an action: the token's `sub`, a claimed user, or the session's own id.
    var viewer: String?
    /// A numbered action's client and number.
    var number: ActionNumber?
    /// The action's arguments: stored as a digest, whole only where the kind keeps them.
    var args: JSON?
    var keepsArgs = false
    /// Wall-clock seconds since 1970.
    var at: Int
    /// The node whose ViewModel made it, on a cluster.
    var node: String?
    /// What the turn read from `context.now` and `context.random`.
    var inputs = TurnRecord()
    /// Presence changes the ViewModel heard since the step before (`{"listed": member}` or
    /// `{"left": id}`), kept only where the kind keeps arguments: a replay needs them.
    var heard: [JSON] = []
    /// Presence changes past `maxHeardBytes` since the step before, not kept: a replay of this
    /// step cannot be exact (the export refuses it).
    var heardDropped = 0
    /// The most a step keeps of presence changes heard before it (a room whose members churn
    /// while nothing else happens must not grow one record without bound).
    static let maxHeardBytes = 8 * 1024

    /// As stored: `{"cause", "action"?, "timer"?, "viewer"?, "client"?, "seq"?, "args"? |
    /// "argsDigest"?, "at", "node"?, "now"?, "seed"?, "heard"?}`. The digest is an HMAC of the arguments' canonical encoding
    /// under the database's own key: equal arguments compare equal, yet a guess cannot be checked
    /// without the key.
    func json(digestKey: [UInt8]) -> JSON {
        var object: [String: JSON] = ["at": .int(at)]
        switch cause {
        case .action(let name): object["cause"] = "action"; object["action"] = .string(name)
        case .refusedAction(let name): object["cause"] = "refused"; object["action"] = .string(name)
        case .timer(let index): object["cause"] = "timer"; object["timer"] = .int(index)
        case .presence: object["cause"] = "presence"
        case .viewers: object["cause"] = "viewers"
        }
        if let viewer { object["viewer"] = .string(viewer) }
        if let number {
            object["client"] = .string(number.client)
            object["seq"] = .int(number.seq)
        }
        if let args {
            if keepsArgs {
                object["args"] = args
            } else {
                object["argsDigest"] = .string(Self.hex(HMACSHA256.mac(args.encoded(), key: digestKey).prefix(8)))
            }
        }
        if let node { object["node"] = .string(node) }
        if let milliseconds = inputs.milliseconds { object["now"] = .int(milliseconds) }
        if let seed = inputs.seed { object["seed"] = .int(Int(seed)) }
        if !heard.isEmpty { object["heard"] = .array(heard) }
        if heardDropped > 0 { object["heardDropped"] = .int(heardDropped) }
        return .object(object)
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }
}
