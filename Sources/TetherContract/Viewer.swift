import TetherJSON

/// Who is looking at a room, or acting on it: the token's `sub` and its claims when the server
/// checks tokens, else the connection's anonymous session id (the `session` of its `hello`) and
/// no claims. Actions receive the viewer that sent them (`ActionTable.on(_:_:_:)` with a
/// three-argument handler), and per-viewer values are computed for each one
/// (`ViewModelContext.perViewer`).
public struct Viewer: Hashable, Sendable {
    /// The token's `sub`, or the anonymous connection's session id.
    public let id: String
    /// The token's payload (a JSON object: `sub`, `exp`, `rooms`, and whatever else the issuer
    /// put there); an empty object without tokens.
    public let claims: JSON

    public init(id: String, claims: JSON = .object([:])) {
        self.id = id
        self.claims = claims
    }

    /// By `id` alone (equality still compares the claims): rooms look viewers up after every
    /// turn, and hashing a token's whole payload each time would cost more than the lookup.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
    }

    /// The viewer of actions that come with none: tests that don't name one.
    public static let unidentified = Viewer(id: "")
}
