import TetherBinding
import TetherJSON

/// One connection in a room's presence (docs/DESIGN.md, Presence): who it is and what it says
/// about itself. A person with two connections is two members with the same `user`.
public struct PresenceMember: Hashable, Sendable {
    /// The connection's id (the session id its `hello` carried): one member per connection.
    public let id: String
    /// The token's subject when auth is on, else the connection's own anonymous id: members of
    /// one user share it.
    public let user: String
    /// The small JSON object the client sent with its join or its last presence update.
    public var data: JSON

    public init(id: String, user: String, data: JSON) {
        self.id = id
        self.user = user
        self.data = data
    }

    /// Its entry in the presence document: `{"user": ..., "data": {...}}`.
    public var json: JSON { ["user": .string(user), "data": data] }

    /// Its data as a contract's `Presence` type; nil when it does not fit (presence data is not
    /// checked by the server: a client may send anything).
    public func data<Data: Decodable>(as type: Data.Type) -> Data? {
        try? JSONValueDecoder().decode(Data.self, from: data)
    }
}

/// Who is in the room, as its ViewModel sees it: an observable map member id → member. The
/// server keeps it; it is never part of the room's state, never persisted, and empty after a
/// restart until clients join again. A ViewModel observes it to react to arrivals and
/// departures (for example to release what a member who left was editing); changes it makes
/// to its own state in that observer are broadcast like an action's.
public final class Presence {
    public let members = ObservableMap<String, PresenceMember>()

    public init() {}

    /// The members (connections) of one user.
    public func members(ofUser user: String) -> [PresenceMember] {
        members.dictionary.values.filter { $0.user == user }.sorted { $0.id < $1.id }
    }
}

extension ViewModel {
    /// Rooms of this kind keep presence; a kind opts out with `static let hasPresence = false`.
    /// Per-session kinds never have presence (nobody else is there).
    public static var hasPresence: Bool { true }
}

extension ViewModelHost {
    /// A member joined or changed its data (the room's turn: its reactions become one patch).
    public func presenceChanged(_ member: PresenceMember) {
        context.presence.members[member.id] = member
    }

    /// A member left.
    public func presenceLeft(memberID: String) {
        _ = context.presence.members.removeValue(forKey: memberID)
    }
}
