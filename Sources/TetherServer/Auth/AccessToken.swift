import Foundation
import JWTKit
import TetherJSON

/// What a token allows in a room: read it (join, watch, describe) or also act on it.
public enum RoomAccess: Sendable, Equatable {
    case read, act
}

/// The claims of a Tether access token: who (`sub`), until when (`exp`, seconds since 1970),
/// which rooms it may act on and read (`rooms`: patterns such as `counter`, `todo:*` or `*`),
/// which it may only read (`read`), and whether it opens the server's own overview room,
/// `tether.server` (`admin`: true; absent means false).
public struct AccessClaims: Equatable, Sendable {
    public var subject: String
    public var expires: Int
    public var rooms: [String]
    /// Rooms the token may join and watch but not act on.
    public var readRooms: [String]
    public var admin: Bool
    /// Registered claims a verifier may check; `tetherd token` writes them when asked.
    public var notBefore: Int?
    public var issuedAt: Int?
    public var issuer: String?
    public var audience: [String]
    /// The whole payload, these claims and any others the issuer added (a room's ViewModel sees
    /// it as `Viewer.claims`).
    public var payload: JSON

    public init(subject: String, expires: Int, rooms: [String], read: [String] = [], admin: Bool = false,
                notBefore: Int? = nil, issuedAt: Int? = nil, issuer: String? = nil, audience: [String] = [],
                payload: JSON = .object([:])) {
        self.subject = subject
        self.expires = expires
        self.rooms = rooms
        self.readRooms = read
        self.admin = admin
        self.notBefore = notBefore
        self.issuedAt = issuedAt
        self.issuer = issuer
        self.audience = audience
        self.payload = payload
    }

    /// Compares the claims Tether reads; `payload` is where they came from.
    public static func == (lhs: AccessClaims, rhs: AccessClaims) -> Bool {
        lhs.subject == rhs.subject && lhs.expires == rhs.expires && lhs.rooms == rhs.rooms && lhs.readRooms == rhs.readRooms
            && lhs.admin == rhs.admin
    }

    /// `rooms` gives both kinds of access, `read` only `.read`. A pattern is a room name, or a
    /// prefix ending in `*`: `todo:*` covers `todo:a` (not the bare `todo`), `*` covers every room.
    public func allows(_ access: RoomAccess, room: String) -> Bool {
        Self.matches(rooms, room) || (access == .read && Self.matches(readRooms, room))
    }

    /// May act on `room` (and so read it).
    public func covers(room: String) -> Bool { allows(.act, room: room) }

    private static func matches(_ patterns: [String], _ room: String) -> Bool {
        patterns.contains { pattern in pattern.hasSuffix("*") ? room.hasPrefix(pattern.dropLast()) : room == pattern }
    }

    /// The payload a token carries: these claims over `payload`'s other ones.
    var encoded: JSON {
        var object: [String: JSON] = if case .object(let fields) = payload { fields } else { [:] }
        object["sub"] = .string(subject)
        object["exp"] = .int(expires)
        object["rooms"] = .array(rooms.map(JSON.string))
        if !readRooms.isEmpty { object["read"] = .array(readRooms.map(JSON.string)) }
        if admin { object["admin"] = true }
        if let notBefore { object["nbf"] = .int(notBefore) }
        if let issuedAt { object["iat"] = .int(issuedAt) }
        if let issuer { object["iss"] = .string(issuer) }
        switch audience.count {
        case 0: break
        case 1: object["aud"] = .string(audience[0])
        default: object["aud"] = .array(audience.map(JSON.string))
        }
        return .object(object)
    }
}

/// The HS256 secrets of this server (`auth-secret`, `auth-secret-file`, `auth-secrets-file`):
/// a thin adapter over jwt-kit, which signs (`mint`) and, through `TokenVerifier`, checks.
///
/// Several secrets can be valid at once, so they can be rotated without refusing anyone: each
/// named secret checks tokens whose header names it (`kid`), and the unnamed one (the single
/// secret of `auth-secret`) tokens without a `kid`. An operator adds a new named secret, moves
/// token issuers to it, then removes the old one.
public struct TokenAuthority: Sendable, Equatable {
    /// Checks tokens without a `kid`.
    let unnamedSecret: [UInt8]?
    /// Checks tokens by their `kid`.
    let namedSecrets: [String: [UInt8]]

    /// One unnamed secret: tokens carry no `kid`.
    public init(secret: [UInt8]) {
        self.init(secret: secret, named: [:])
    }

    /// An unnamed secret (optional) and named ones.
    public init(secret: [UInt8]?, named: [String: [UInt8]]) {
        unnamedSecret = secret
        namedSecrets = named
    }

    /// The key names (`kid`s), sorted; for logs.
    public var keyNames: [String] { namedSecrets.keys.sorted() }
    public var hasUnnamedSecret: Bool { unnamedSecret != nil }

    /// The same authority plus `other`'s secrets (its unnamed secret, if any, wins).
    public func adding(_ other: TokenAuthority) -> TokenAuthority {
        TokenAuthority(secret: other.unnamedSecret ?? unnamedSecret, named: namedSecrets.merging(other.namedSecrets) { _, new in new })
    }

    /// The unnamed secret also as the named secret `kid` (for `tetherd token --secret S --kid K`).
    public func namingUnnamedSecret(_ kid: String) -> TokenAuthority {
        guard let unnamedSecret else { return self }
        return TokenAuthority(secret: unnamedSecret, named: namedSecrets.merging([kid: unnamedSecret]) { _, new in new })
    }

    /// The secret that checks tokens with this `kid` (nil: without one).
    func secret(for kid: String?) -> [UInt8]? {
        kid.map { namedSecrets[$0] } ?? unnamedSecret
    }

    /// A token signed with the named secret `kid`, or with the unnamed one when `kid` is nil.
    /// Nil when this authority has no such secret.
    public func mint(_ claims: AccessClaims, kid: String? = nil) async -> String? {
        guard let secret = secret(for: kid) else { return nil }
        let keys = JWTKeyCollection()
        let name = kid.map { JWKIdentifier(string: $0) }
        // Added without a kid, the secret is the collection's default and the header names none.
        await keys.add(hmac: HMACKey(from: HS256Key.jwtKitKey(secret)), digestAlgorithm: .sha256, kid: name)
        var header = JWTHeader()
        header.typ = "JWT"
        return try? await keys.sign(TokenPayload(claims.encoded), kid: name, header: header)
    }

    /// A token signed with the one secret of `init(secret:)`.
    public func mint(_ claims: AccessClaims) async -> String {
        await mint(claims, kid: nil)!
    }

    /// The token's claims, if its signature is from one of our secrets (the one its `kid`
    /// names) and it is valid at `now` (with `leeway` seconds for clocks apart).
    public func verify(_ token: String, now: Int = Int(Date().timeIntervalSince1970), leeway: Int = 0) throws(TokenError) -> AccessClaims {
        try TokenVerifier(secrets: self, leeway: leeway).verify(token, now: now).get()
    }
}
