import TetherState

/// One client connection's state, on the hub's queue: its send queue and the rooms it joined.
final class Session {
    let id: String
    /// The socket shard whose hub owns it (immutable: rooms read it to route what they deliver).
    let shard: Int
    let connection: any ClientConnection
    var sendQueue: SendQueue
    /// Rooms this connection joined, by name.
    var joined: [String: any RoomEndpoint] = [:]
    /// This connection's private instances of per-session kinds, joined or not.
    var privateRooms: [String: any RoomEndpoint] = [:]
    var consecutiveErrors = 0
    /// Whether a limit refused one of its requests yet (logged once per connection).
    var hitLimit = false
    var isClosed = false
    /// Whether the hub will flush this session's queue when the current batch of posts is done.
    var isFlushScheduled = false
    /// With auth on: until when (seconds since 1970) this connection's token for each joined
    /// room is valid.
    var authorizedUntil: [String: Int] = [:]
    /// With auth on: who the token of each joined room names (its `sub` and claims).
    var viewers: [String: Viewer] = [:]
    /// With auth on: rooms joined with read access only (a `read` claim), with the token's subject.
    var readOnly: [String: String] = [:]
    /// What its `hello` said: its client id, and who it is without a token (`user`, else the
    /// client id); nil before a hello (then the session id stands for both).
    var identity: (client: String, viewer: String)?
    /// Whether it sent anything but a hello yet (a hello must come first).
    var hasRequested = false
    var actions: TokenBucket

    init(id: String, shard: Int = 0, connection: any ClientConnection, sendQueue: SendQueue, actions: TokenBucket) {
        self.id = id
        self.shard = shard
        self.connection = connection
        self.sendQueue = sendQueue
        self.actions = actions
    }
}

/// A session as rooms hold it: identity only. Rooms pass it back to the hub's queue, which
/// alone dereferences it (`@unchecked Sendable` under that rule).
public struct SessionHandle: @unchecked Sendable, Hashable {
    let session: Session
    /// Who the session is in the room it is handed to with a join or an action (a value copy,
    /// so rooms may read it); not part of the handle's identity.
    var viewer: Viewer = .unidentified

    public static func == (lhs: SessionHandle, rhs: SessionHandle) -> Bool { lhs.session === rhs.session }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(session)) }
}
