import TetherJSON

/// Wire protocol version 1 (docs/PROTOCOL.md): WebSocket text frames, one JSON object each.
public enum TetherProtocol {
    public static let version = 1
    public static let subprotocol = "tether.v1"
    /// The largest presence `data` object a client may send, encoded (docs/PROTOCOL.md, Presence).
    public static let maxPresenceBytes = 1024
}

/// Where a client left a room's stream: resume after this version of this epoch.
public struct ResumePoint: Hashable, Sendable {
    public var epoch: String
    public var version: Int

    public init(epoch: String, version: Int) {
        self.epoch = epoch
        self.version = version
    }
}

/// Messages a client sends.
public enum ClientMessage: Hashable, Sendable {
    /// Says who the client is, before anything else: `client`, a random id it keeps for its life
    /// (a page until it closes, a process), and optionally `user`, a stable anonymous identity it
    /// keeps across runs. Without tokens the connection's viewer is `user`, else `client`. A
    /// claim, not authentication.
    case hello(client: String, user: String? = nil)
    /// Subscribe to `room`; with `since`, resume from that version. With `presence` (an object,
    /// `{}` for none), the connection is listed in the room's presence and gets its stream; with
    /// `watchPresence` alone it gets the stream without being listed (a spectator).
    case join(room: String, id: Int? = nil, since: ResumePoint? = nil, token: String? = nil, presence: JSON? = nil, watchPresence: Bool = false)
    case leave(room: String, id: Int? = nil)
    /// Ask the room's ViewModel to act. `id` is the client's, echoed in the ack or error. `seq`,
    /// after a `hello` with a client id: the action's number, increasing per client, kept when
    /// the action is sent again (a resend after a lost answer): the room runs each number once
    /// and answers a repeat with the first outcome.
    case action(room: String, name: String, args: JSON? = nil, id: Int, seq: Int? = nil)
    /// Ask which room kinds the server has (all, or the one named), with their actions.
    case describe(kind: String? = nil, id: Int? = nil)
    /// Replace this connection's presence data in `room` (joined with presence).
    case presence(room: String, data: JSON, id: Int? = nil)

    /// The room the request is about (none for `describe`).
    public var room: String? {
        switch self {
        case .join(let room, _, _, _, _, _), .leave(let room, _), .action(let room, _, _, _, _), .presence(let room, _, _): return room
        case .describe, .hello: return nil
        }
    }

    public var id: Int? {
        switch self {
        case .join(_, let id, _, _, _, _), .leave(_, let id), .describe(_, let id), .presence(_, _, let id): return id
        case .action(_, _, _, let id, _): return id
        case .hello: return nil
        }
    }
}

/// A room kind as clients discover it (`describe`): its scope and its actions' arguments, and
/// for a kind with a contract its schema and fingerprint.
public struct KindDescription: Hashable, Sendable {
    public var name: String
    /// "shared" or "per-session".
    public var scope: String
    public var actions: [Action]

    public struct Action: Hashable, Sendable {
        public var name: String
        /// The fields of its `args` object.
        public var arguments: [JSONShape.Field]

        public init(name: String, arguments: [JSONShape.Field]) {
            self.name = name
            self.arguments = arguments
        }
    }

    /// The JSON Schema (2020-12) of its contract: `state`, `views`, `presence`, `actions`,
    /// `errors`, `$defs`; nil for a kind without a contract (and from older servers).
    public var schema: JSON?
    /// `"sha256:"` and the hex SHA-256 of the schema's canonical form; nil without a contract.
    public var fingerprint: String?

    public init(name: String, scope: String, actions: [Action], schema: JSON? = nil, fingerprint: String? = nil) {
        self.name = name
        self.scope = scope
        self.actions = actions
        self.schema = schema
        self.fingerprint = fingerprint
    }
}

/// Messages the server sends.
public enum ServerMessage: Hashable, Sendable {
    /// First message on every connection.
    case hello(protocolVersion: Int, server: String, session: String)
    /// The whole state of `room` at `version`.
    case snapshot(room: String, epoch: String, version: Int, state: JSON)
    /// Applying `operations` to the state at `from` gives exactly the state at `version`.
    case patch(room: String, epoch: String, from: Int, version: Int, operations: [PatchOperation])
    /// Who is in `room` at presence `version`: member id → `{"user": ..., "data": {...}}`.
    /// Presence has its own versions, apart from the room's state (docs/PROTOCOL.md, Presence).
    case presence(room: String, version: Int, members: JSON)
    /// Applying `operations` to the presence members at `from` gives those at `version`.
    case presencePatch(room: String, from: Int, version: Int, operations: [PatchOperation])
    /// The request `id` was done: an action's effects are in the state at `version` or earlier;
    /// a join's stream starts at `version`; a leave and a presence update have no version.
    case ack(id: Int, room: String, version: Int?)
    /// The answer to `describe`.
    case description(id: Int?, kinds: [KindDescription])
    case error(ProtocolError)
}

/// The error codes (docs/PROTOCOL.md).
public enum ErrorCode: String, Hashable, Sendable, CaseIterable {
    /// Not JSON, no type, an unknown type, or a field of the wrong type.
    case badMessage = "bad_message"
    case unknownRoom = "unknown_room"
    case unknownAction = "unknown_action"
    /// The action's arguments are missing, of the wrong type or refer to nothing.
    case invalidArgs = "invalid_args"
    case unauthorized
    case rateLimited = "rate_limited"
    case tooLarge = "too_large"
    /// The room can't take actions right now (its cluster log is unreachable, or its owner is
    /// changing). Whether the action was applied is in the error's `applied`.
    case unavailable
    case `internal`
    /// An administrator deleted a room the connection had joined: its stream ends here, and a
    /// new join gets a new, empty room.
    case roomDeleted = "room_deleted"
    /// A numbered action (`seq`) older than the outcomes the room remembers for the client: it
    /// is not run again, and whether it was applied is unknown.
    case staleAction = "stale_action"
}

/// An `error` message: what went wrong and, when known, which request and room it concerns.
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var id: Int?
    public var room: String?
    /// Whether the request this error answers changed anything: `.no` for certain (safe to send
    /// again), or `.unknown` (the server lost track of it: it may have been applied).
    public var applied: Applied
    /// For an action a contract's ViewModel refused: the case of the contract's `Failure`
    /// ("overflow"), stable where `message` is free text. Nil for every other error.
    public var reason: String?

    /// An error's claim about its request. There is no "yes": an applied action gets an `ack`.
    public enum Applied: String, Hashable, Sendable {
        /// Nothing changed: the request may be sent again.
        case no
        /// It may or may not have been applied (the room's owner was lost while it was in flight).
        case unknown

        /// As the `applied` member says it: `false`, or `"unknown"`.
        public var json: JSON { self == .no ? .bool(false) : .string("unknown") }

        /// From an `applied` member; anything but `false` (a missing one too) is taken as not knowing.
        public init(json: JSON?) { self = json == .bool(false) ? .no : .unknown }
    }

    public init(_ code: ErrorCode, _ message: String, id: Int? = nil, room: String? = nil, applied: Applied = .no, reason: String? = nil) {
        self.code = code
        self.message = message
        self.id = id
        self.room = room
        self.applied = applied
        self.reason = reason
    }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let room { text += " (room \(room))" }
        if applied == .unknown { text += " (it may or may not have been applied)" }
        return text
    }
}
