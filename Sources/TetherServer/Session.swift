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

    init(id: String, connection: WebSocketConnection, outbox: Outbox) {
        self.id = id
        self.connection = connection
        self.outbox = outbox
    }
}

/// A session as rooms hold it: identity only. Rooms pass it back to the socket thread, which
/// alone dereferences it (`@unchecked Sendable` under that rule).
struct SessionHandle: @unchecked Sendable, Hashable {
    let session: Session

    static func == (lhs: SessionHandle, rhs: SessionHandle) -> Bool { lhs.session === rhs.session }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(session)) }
}
