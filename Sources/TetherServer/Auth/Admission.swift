import TetherProtocol
import TetherState

/// Who may come in, and whether there is room: one decision for every door into the server (a
/// WebSocket join, action or presence update; an HTTP administration request). The caller
/// gathers the facts (the token, the time, the counts); `decide` reads them and the settings and
/// answers with a grant or a refusal. Pure: no I/O and no state, so tables test it.
enum Admission {
    enum Request {
        /// A WebSocket join of `room`, with the token it carried.
        case join(room: String, kind: ViewModelKind, token: String?)
        /// An action in `room`. With tokens, the connection joined it with one that is still valid.
        case act(room: String, kind: ViewModelKind)
        /// A presence update in `room` (its token, if any, was checked at the join).
        case updatePresence(room: String)
        /// Room administration over HTTP (`GET /rooms`, `DELETE /rooms/NAME`).
        case administer(token: String?)
    }

    /// What the caller knows at the moment of the request.
    struct Facts: Equatable {
        /// Seconds since 1970.
        var now: Int
        /// Whether the connection's bucket had a token left for this action or presence update.
        var withinRate = true
        /// Whether the connection has joined the room.
        var joined = false
        /// With tokens: until when (seconds since 1970) the token the connection joined the room
        /// with is valid; nil when it joined without one (or not at all).
        var authorizedUntil: Int?
        /// With tokens: the token's subject when the connection joined the room with read access
        /// only (a `read` claim); nil when it may act.
        var readOnlyFor: String?
        /// Rooms the connection has joined.
        var roomsJoined = 0
        /// Where the room stands among the server's rooms (read for joins, and actions on rooms
        /// not joined).
        var room = RoomCounts()
    }

    /// The server's rooms as a new room would count against its limits.
    struct RoomCounts: Equatable {
        /// The room is live already (for a per-session kind: this connection's instance is).
        var isLive = false
        /// The room exists, live or stored: an existing room is never refused by the per-kind limit.
        var exists = false
        /// Live rooms in the server, shared and per-session.
        var rooms = 0
        /// Rooms of the room's kind, live or stored.
        var roomsOfKind = 0
    }

    /// Admitted: by anyone's right (no tokens on this server), or by this token's claims.
    enum Grant: Equatable {
        case open
        case token(AccessClaims)
    }

    struct Refusal: Error, Equatable {
        enum Reason: Equatable {
            /// No token where one is needed (HTTP 401, `unauthorized`).
            case noToken
            /// A token that does not verify or has expired (HTTP 401, `unauthorized`).
            case badToken
            /// A valid token that does not allow this (HTTP 403, `unauthorized`).
            case forbidden
            /// A limit: rate, rooms per connection, rooms in the server or of a kind (`rate_limited`).
            case limited
            /// The token can't be checked yet: its identity provider's keys are being fetched
            /// (HTTP 503, `unavailable`; retrying in a moment is the remedy, not a new token).
            case keysPending
        }

        var reason: Reason
        var message: String

        var code: ErrorCode {
            switch reason {
            case .limited: .rateLimited
            case .keysPending: .unavailable
            case .noToken, .badToken, .forbidden: .unauthorized
            }
        }
    }

    static func decide(_ request: Request, facts: Facts, settings: ServerConfiguration) -> Result<Grant, Refusal> {
        switch request {
        case .join(let room, let kind, let token):
            let grant: Grant
            switch authorize(token, toJoin: room, kind: kind, settings: settings, now: facts.now) {
            case .success(let granted): grant = granted
            case .failure(let refusal): return .failure(refusal)
            }
            if !facts.joined, facts.roomsJoined >= settings.maxRoomsPerConnection {
                return .failure(Refusal(reason: .limited, message: "a connection may join at most \(settings.maxRoomsPerConnection) rooms; leave one first"))
            }
            if let full = capacityRefusal(room: room, kind: kind, counts: facts.room, settings: settings) { return .failure(full) }
            return .success(grant)

        case .act(let room, let kind):
            guard facts.withinRate else {
                return .failure(Refusal(reason: .limited, message: "more than \(Int(settings.maxActionsPerSecond)) actions per second"))
            }
            if settings.requiresTokens {
                guard let until = facts.authorizedUntil, facts.joined else {
                    return .failure(Refusal(reason: .noToken, message: "join \(room) with a token before acting on it"))
                }
                if let expired = expiry(of: room, until: until, now: facts.now) { return .failure(expired) }
                if let subject = facts.readOnlyFor {
                    return .failure(Refusal(reason: .forbidden, message: "the token of \"\(subject)\" may read room \(room) but not act on it"))
                }
            }
            if !facts.joined, let full = capacityRefusal(room: room, kind: kind, counts: facts.room, settings: settings) { return .failure(full) }
            return .success(.open)

        case .updatePresence(let room):
            guard facts.withinRate else {
                return .failure(Refusal(reason: .limited, message: "more than \(Int(settings.maxActionsPerSecond)) actions and presence updates per second"))
            }
            if settings.requiresTokens, let until = facts.authorizedUntil, let expired = expiry(of: room, until: until, now: facts.now) {
                return .failure(expired)
            }
            return .success(.open)

        case .administer(let token):
            guard settings.requiresTokens else { return .success(.open) }
            let what = "room administration"
            guard let token else {
                return .failure(Refusal(reason: .noToken, message: "\(what) needs a token with the admin claim (tetherd token --admin)"))
            }
            switch verify(token, settings: settings, now: facts.now) {
            case .failure(let refusal): return .failure(refusal)
            case .success(let claims) where !claims.admin: return .failure(noAdminClaim(what, claims))
            case .success(let claims): return .success(.token(claims))
            }
        }
    }

    // MARK: Tokens

    /// The server's own rooms show every room's name and the server's figures: only for admin
    /// tokens, whatever rooms they cover. Other rooms need a token that covers them.
    private static func authorize(_ token: String?, toJoin room: String, kind: ViewModelKind, settings: ServerConfiguration,
                                  now: Int) -> Result<Grant, Refusal> {
        guard settings.requiresTokens else { return .success(.open) }
        guard let token else { return .failure(Refusal(reason: .noToken, message: "this server needs a token to join \(room)")) }
        let claims: AccessClaims
        switch verify(token, settings: settings, now: now) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let verified): claims = verified
        }
        if SystemRoom.isSystemKind(kind.name) {
            return claims.admin ? .success(.token(claims)) : .failure(noAdminClaim("\(room) (the server's overview)", claims))
        }
        // A `read` claim admits the join; `act` then refuses actions (facts.readOnlyFor).
        guard claims.allows(.read, room: room) else {
            return .failure(Refusal(reason: .forbidden, message: "the token of \"\(claims.subject)\" does not cover room \(room)"))
        }
        return .success(.token(claims))
    }

    private static func verify(_ token: String, settings: ServerConfiguration, now: Int) -> Result<AccessClaims, Refusal> {
        settings.tokenVerifier.verify(token, now: now).mapError { error in
            Refusal(reason: error.isTransient ? .keysPending : .badToken, message: error.description)
        }
    }

    private static func noAdminClaim(_ what: String, _ claims: AccessClaims) -> Refusal {
        Refusal(reason: .forbidden, message: "\(what) needs a token with the admin claim (tetherd token --admin); the token of \"\(claims.subject)\" has none")
    }

    private static func expiry(of room: String, until: Int, now: Int) -> Refusal? {
        guard now >= until else { return nil }
        return Refusal(reason: .badToken, message: "the token for \(room) has expired; join again with a fresh one")
    }

    // MARK: Capacity

    /// Nil when the room is live already or one more fits under the limits: live rooms in the
    /// server, and rooms (live or stored) of one kind. A stored room is no new room: existing
    /// rooms keep working past the per-kind limit.
    private static func capacityRefusal(room: String, kind: ViewModelKind, counts: RoomCounts, settings: ServerConfiguration) -> Refusal? {
        if counts.isLive { return nil }
        guard counts.rooms < settings.maxRooms else {
            return Refusal(reason: .limited, message: "the server holds its maximum of \(settings.maxRooms) rooms; try again later")
        }
        guard kind.scope == .perSession || SystemRoom.isSystemKind(kind.name) || counts.exists
              || counts.roomsOfKind < settings.maxRoomsPerKind else {
            return Refusal(reason: .limited, message: "\(kind.name) has its maximum of \(settings.maxRoomsPerKind) rooms (--max-rooms-per-kind): use an existing one, or delete some (tether rooms delete NAME)")
        }
        return nil
    }
}
