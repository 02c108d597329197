import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
import TetherState
@testable import TetherServer

/// Admission by tables: each row is a request, the facts its door gathered, and the answer
/// (admitted, or refused for which reason). The WebSocket hub and the HTTP routes both ask it.
@Suite("Admission: tokens, limits and capacity by tables")
struct AdmissionTests {
    static let now = 1_800_000_000
    static let authority = TokenAuthority(secret: Array("s3cret".utf8))
    static let counter = ViewModelKind("counter", scope: .shared, Counter.self)
    static let login = ViewModelKind("login", scope: .perSession, Login.self)
    static let overview = ViewModelKind("tether.server", scope: .shared, Counter.self)

    static func token(_ rooms: [String], read: [String] = [], admin: Bool = false, expires: Int = now + 60) async -> String {
        await authority.mint(AccessClaims(subject: "ana", expires: expires, rooms: rooms, read: read, admin: admin))
    }

    static func settings(auth: Bool = true, maxRooms: Int = 10, perKind: Int = 3, perConnection: Int = 2) -> ServerConfiguration {
        var settings = ServerConfiguration()
        settings.auth = auth ? authority : nil
        settings.maxRooms = maxRooms
        settings.maxRoomsPerKind = perKind
        settings.maxRoomsPerConnection = perConnection
        return settings
    }

    /// Tokens from an identity provider whose keys have not been fetched yet.
    static func providerSettings() -> ServerConfiguration {
        var settings = settings()
        settings.jwksURL = "https://idp.example.com/jwks"
        settings.tokenIssuer = "https://idp.example.com"
        settings.identityKeys = IdentityKeys()
        return settings
    }

    /// The answer, reduced to what a row compares: "open", "token ana", or the refusal's reason.
    static func answer(_ request: Admission.Request, _ facts: Admission.Facts, _ settings: ServerConfiguration) -> String {
        switch Admission.decide(request, facts: facts, settings: settings) {
        case .success(.open): "open"
        case .success(.token(let claims)): "token \(claims.subject)"
        case .failure(let refusal): "\(refusal.reason)"
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let request: @Sendable () async -> Admission.Request
        var facts = Admission.Facts(now: AdmissionTests.now)
        var settings = AdmissionTests.settings()
        let expected: String
        var testDescription: String { name }
    }

    static let live = Admission.RoomCounts(isLive: true)
    static let fresh = Admission.RoomCounts(isLive: false, exists: false, rooms: 1, roomsOfKind: 1)

    static let rows: [Row] = [
        // Joins: tokens.
        Row(name: "no tokens on the server: anyone joins", request: { .join(room: "counter", kind: counter, token: nil) },
            settings: settings(auth: false), expected: "open"),
        Row(name: "tokens needed, none sent", request: { .join(room: "counter", kind: counter, token: nil) }, expected: "noToken"),
        Row(name: "a garbled token", request: { .join(room: "counter", kind: counter, token: "x.y.z") }, expected: "badToken"),
        Row(name: "an expired token (past the 30 s leeway)", request: { .join(room: "counter", kind: counter, token: await token(["*"], expires: now - 31)) }, expected: "badToken"),
        Row(name: "a token expired within the leeway", request: { .join(room: "counter", kind: counter, token: await token(["*"], expires: now - 29)) },
            facts: .init(now: now, room: live), expected: "token ana"),
        Row(name: "a token for other rooms", request: { .join(room: "counter:b", kind: counter, token: await token(["counter:a"])) }, expected: "forbidden"),
        Row(name: "a token covering the room", request: { .join(room: "counter:b", kind: counter, token: await token(["counter:*"])) },
            facts: .init(now: now, room: fresh), expected: "token ana"),
        Row(name: "an identity provider's token before its keys are fetched: retry, not refused",
            request: { .join(room: "counter", kind: counter, token: TokenVerifierTests.forged(
                header: ["alg": "RS256", "kid": "k1"], payload: ["iss": "https://idp.example.com", "exp": .int(now + 60), "rooms": ["*"]])) },
            settings: providerSettings(), expected: "keysPending"),
        Row(name: "another issuer's token on a server with an identity provider",
            request: { .join(room: "counter", kind: counter, token: TokenVerifierTests.forged(
                header: ["alg": "RS256", "kid": "k1"], payload: ["iss": "https://evil.example.com", "exp": .int(now + 60), "rooms": ["*"]])) },
            settings: providerSettings(), expected: "badToken"),
        Row(name: "the server's own token on a server with an identity provider too", request: { .join(room: "counter", kind: counter, token: await token(["*"])) },
            facts: .init(now: now, room: live), settings: providerSettings(), expected: "token ana"),
        // Read-only rooms (the read claim): joined, not acted on.
        Row(name: "a read claim covering the room", request: { .join(room: "counter:b", kind: counter, token: await token([], read: ["counter:*"])) },
            facts: .init(now: now, room: live), expected: "token ana"),
        Row(name: "a read claim for other rooms", request: { .join(room: "counter:b", kind: counter, token: await token(["todo"], read: ["counter:a"])) },
            expected: "forbidden"),
        Row(name: "the overview with a read claim of '*' but no admin claim", request: { .join(room: "tether.server", kind: overview, token: await token([], read: ["*"])) },
            expected: "forbidden"),
        Row(name: "the overview without the admin claim, even with '*'", request: { .join(room: "tether.server", kind: overview, token: await token(["*"])) },
            expected: "forbidden"),
        Row(name: "the overview with the admin claim and no rooms", request: { .join(room: "tether.server", kind: overview, token: await token([], admin: true)) },
            facts: .init(now: now, room: live), expected: "token ana"),
        // Joins: limits and capacity.
        Row(name: "rooms per connection reached", request: { .join(room: "counter", kind: counter, token: nil) },
            facts: .init(now: now, roomsJoined: 2, room: live), settings: settings(auth: false), expected: "limited"),
        Row(name: "rooms per connection reached, joining one joined again", request: { .join(room: "counter", kind: counter, token: nil) },
            facts: .init(now: now, joined: true, roomsJoined: 2, room: live), settings: settings(auth: false), expected: "open"),
        Row(name: "the server is full, the room is live", request: { .join(room: "counter", kind: counter, token: nil) },
            facts: .init(now: now, room: .init(isLive: true)), settings: settings(auth: false, maxRooms: 1), expected: "open"),
        Row(name: "the server is full, a new room", request: { .join(room: "counter:new", kind: counter, token: nil) },
            facts: .init(now: now, room: .init(rooms: 1)), settings: settings(auth: false, maxRooms: 1), expected: "limited"),
        Row(name: "the kind is full, a new room", request: { .join(room: "counter:new", kind: counter, token: nil) },
            facts: .init(now: now, room: .init(rooms: 3, roomsOfKind: 3)), settings: settings(auth: false), expected: "limited"),
        Row(name: "the kind is full, a stored room", request: { .join(room: "counter:old", kind: counter, token: nil) },
            facts: .init(now: now, room: .init(exists: true, rooms: 3, roomsOfKind: 3)), settings: settings(auth: false), expected: "open"),
        Row(name: "per-session kinds have no per-kind limit", request: { .join(room: "login", kind: login, token: nil) },
            facts: .init(now: now, room: .init(rooms: 3, roomsOfKind: 3)), settings: settings(auth: false), expected: "open"),
        Row(name: "the token is checked before the limits", request: { .join(room: "counter", kind: counter, token: nil) },
            facts: .init(now: now, roomsJoined: 2, room: live), expected: "noToken"),
        // Actions.
        Row(name: "an action over the rate", request: { .act(room: "counter", kind: counter) },
            facts: .init(now: now, withinRate: false, joined: true, authorizedUntil: now + 60), expected: "limited"),
        Row(name: "an action with tokens, not joined", request: { .act(room: "counter", kind: counter) }, expected: "noToken"),
        Row(name: "an action with tokens, joined", request: { .act(room: "counter", kind: counter) },
            facts: .init(now: now, joined: true, authorizedUntil: now + 60), expected: "open"),
        Row(name: "an action in a room joined read-only", request: { .act(room: "counter", kind: counter) },
            facts: .init(now: now, joined: true, authorizedUntil: now + 60, readOnlyFor: "ana"), expected: "forbidden"),
        Row(name: "an action in a room joined read-only, no tokens on the server", request: { .act(room: "counter", kind: counter) },
            facts: .init(now: now, joined: true, readOnlyFor: "ana"), settings: settings(auth: false), expected: "open"),
        Row(name: "an action after the join's token expired", request: { .act(room: "counter", kind: counter) },
            facts: .init(now: now, joined: true, authorizedUntil: now), expected: "badToken"),
        Row(name: "an action without joining, no tokens, a new room on a full server", request: { .act(room: "counter:new", kind: counter) },
            facts: .init(now: now, room: .init(rooms: 1)), settings: settings(auth: false, maxRooms: 1), expected: "limited"),
        Row(name: "an action in a joined room on a full server", request: { .act(room: "counter", kind: counter) },
            facts: .init(now: now, joined: true, room: .init(rooms: 1)), settings: settings(auth: false, maxRooms: 1), expected: "open"),
        // Presence updates.
        Row(name: "a presence update over the rate", request: { .updatePresence(room: "counter") },
            facts: .init(now: now, withinRate: false), settings: settings(auth: false), expected: "limited"),
        Row(name: "a presence update after the token expired", request: { .updatePresence(room: "counter") },
            facts: .init(now: now, joined: true, authorizedUntil: now - 5), expected: "badToken"),
        Row(name: "a presence update with a valid token", request: { .updatePresence(room: "counter") },
            facts: .init(now: now, joined: true, authorizedUntil: now + 5), expected: "open"),
        // Administration over HTTP.
        Row(name: "administration without tokens on the server", request: { .administer(token: nil) }, settings: settings(auth: false), expected: "open"),
        Row(name: "administration without a token", request: { .administer(token: nil) }, expected: "noToken"),
        Row(name: "administration with a token without the admin claim", request: { .administer(token: await token(["*"])) }, expected: "forbidden"),
        Row(name: "administration with an expired admin token", request: { .administer(token: await token([], admin: true, expires: now - 30)) }, expected: "badToken"),
        Row(name: "administration with an admin token", request: { .administer(token: await token([], admin: true)) }, expected: "token ana"),
    ]

    @Test(arguments: rows)
    func eachRequestGetsItsAnswer(_ row: Row) async {
        #expect(Self.answer(await row.request(), row.facts, row.settings) == row.expected)
    }

    @Test func refusalsNameWhatIsMissingAndMapToProtocolCodes() async throws {
        let settings = Self.settings()
        guard case .failure(let noAdmin) = Admission.decide(.administer(token: await Self.token(["*"])), facts: .init(now: Self.now), settings: settings),
              case .failure(let full) = Admission.decide(.join(room: "counter:x", kind: Self.counter, token: nil), facts: .init(now: Self.now, room: .init(rooms: 10)),
                                                         settings: Self.settings(auth: false))
        else { Issue.record("both are refused"); return }
        #expect(noAdmin.message == "room administration needs a token with the admin claim (tetherd token --admin); the token of \"ana\" has none")
        #expect(noAdmin.code == .unauthorized)
        #expect(full.message == "the server holds its maximum of 10 rooms; try again later")
        #expect(full.code == .rateLimited)
        #expect(Admission.Refusal(reason: .keysPending, message: "").code == .unavailable, "retry-safe, not a refusal of the token")
        let readOnly = Admission.decide(.act(room: "counter", kind: Self.counter),
                                        facts: .init(now: Self.now, joined: true, authorizedUntil: Self.now + 60, readOnlyFor: "service:reports"), settings: settings)
        guard case .failure(let readOnly) = readOnly else { Issue.record("an action in a room joined read-only is refused"); return }
        #expect(readOnly.message == "the token of \"service:reports\" may read room counter but not act on it" && readOnly.code == .unauthorized)
    }
}
