import TetherProtocol
import TetherTransport

/// One client connection's state, on the socket thread: its send queue and the rooms it joined.
final class Session {
    let id: String
    let connection: WebSocketConnection
    var outbox: Outbox
    /// Rooms this connection joined, by name.
    var joined: [String: Room] = [:]
    /// This connection's private instances of per-session kinds, joined or not.
    var privateRooms: [String: Room] = [:]
    var consecutiveErrors = 0
    var isClosed = false
    /// Whether the hub will flush this session's queue when the current batch of posts is done.
    var isFlushScheduled = false
    /// With auth on: until when this connection's token for each joined room is valid.
    var authorizedUntil: [String: Int] = [:]
    var actions: TokenBucket

    init(id: String, connection: WebSocketConnection, outbox: Outbox, actions: TokenBucket) {
        self.id = id
        self.connection = connection
        self.outbox = outbox
        self.actions = actions
    }
}

/// A session as rooms hold it: identity only. Rooms pass it back to the socket thread, which
/// alone dereferences it (`@unchecked Sendable` under that rule).
struct SessionHandle: @unchecked Sendable, Hashable {
    let session: Session

    static func == (lhs: SessionHandle, rhs: SessionHandle) -> Bool { lhs.session === rhs.session }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(session)) }
}

/// Allows `rate` events per second on average and bursts of up to `capacity`.
struct TokenBucket {
    let rate: Double
    let capacity: Double
    private var tokens: Double
    private var refilled = ContinuousClock.now

    init(rate: Double, capacity: Int) {
        self.rate = rate
        self.capacity = Double(capacity)
        tokens = Double(capacity)
    }

    /// Takes one token if there is one.
    mutating func take(now: ContinuousClock.Instant = .now) -> Bool {
        let elapsed = now - refilled
        refilled = now
        tokens = min(capacity, tokens + rate * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
