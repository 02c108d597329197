import COpenSSL
import Foundation
import TetherJSON

/// The claims of a Tether access token: who (`sub`), until when (`exp`, seconds since 1970),
/// which rooms (`rooms`: patterns such as `counter`, `todo:*` or `*`), and whether it opens the
/// server's own overview room, `tether.server` (`admin`: true; absent means false).
public struct AccessClaims: Equatable, Sendable {
    public var subject: String
    public var expires: Int
    public var rooms: [String]
    public var admin: Bool
    /// The whole payload, these claims and any others the issuer added (a room's ViewModel sees
    /// it as `Viewer.claims`).
    public var payload: JSON

    public init(subject: String, expires: Int, rooms: [String], admin: Bool = false, payload: JSON = .object([:])) {
        self.subject = subject
        self.expires = expires
        self.rooms = rooms
        self.admin = admin
        self.payload = payload
    }

    /// Compares the claims Tether reads; `payload` is where they came from.
    public static func == (lhs: AccessClaims, rhs: AccessClaims) -> Bool {
        lhs.subject == rhs.subject && lhs.expires == rhs.expires && lhs.rooms == rhs.rooms && lhs.admin == rhs.admin
    }

    /// A pattern is a room name, or a prefix ending in `*`: `todo:*` covers `todo:a` (not the
    /// bare `todo`), `*` covers every room.
    public func covers(room: String) -> Bool {
        rooms.contains { pattern in
            pattern.hasSuffix("*") ? room.hasPrefix(pattern.dropLast()) : room == pattern
        }
    }
}

public enum TokenError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case unsupportedAlgorithm(String)
    case unknownKey(String?)
    case badSignature
    /// Expired at `at`, checked at `now` (both seconds since 1970).
    case expired(at: Int, now: Int)

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed token: \(why)"
        case .unsupportedAlgorithm(let alg): return "token algorithm \(alg) is not accepted (HS256 only)"
        case .unknownKey(let kid?): return "the token's key \"\(kid)\" (kid) is not one of this server's secrets"
        case .unknownKey(nil): return "the token names no key (kid) and this server has no unnamed secret"
        case .badSignature: return "token signature does not match"
        case .expired(let at, let now): return "token expired at \(Self.utc(at)) (\(Self.elapsed(now - at)) ago)"
        }
    }

    /// "2033-05-18T03:33:20Z".
    static func utc(_ seconds: Int) -> String {
        Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
    }

    /// "5 s", "3 min", "2 h", "4 days".
    static func elapsed(_ seconds: Int) -> String {
        switch max(0, seconds) {
        case ..<60: return "\(max(0, seconds)) s"
        case ..<3_600: return "\(seconds / 60) min"
        case ..<86_400: return "\(seconds / 3_600) h"
        default: return "\(seconds / 86_400) day\(seconds / 86_400 == 1 ? "" : "s")"
        }
    }
}

/// Signs and checks HS256 JSON Web Tokens with shared secrets, using OpenSSL's HMAC.
///
/// Several secrets can be valid at once, so they can be rotated without refusing anyone: each
/// named secret checks tokens whose header names it (`kid`), and the unnamed one (the single
/// secret of `auth-secret`) tokens without a `kid`. An operator adds a new named secret, moves
/// token issuers to it, then removes the old one.
public struct TokenAuthority: Sendable, Equatable {
    /// Checks tokens without a `kid`.
    private let unnamedSecret: [UInt8]?
    /// Checks tokens by their `kid`.
    private let namedSecrets: [String: [UInt8]]

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

    /// A token signed with the named secret `kid`, or with the unnamed one when `kid` is nil.
    /// Nil when this authority has no such secret.
    public func mint(_ claims: AccessClaims, kid: String? = nil) -> String? {
        guard let secret = kid.map({ namedSecrets[$0] }) ?? unnamedSecret else { return nil }
        var header: [String: JSON] = ["alg": "HS256", "typ": "JWT"]
        if let kid { header["kid"] = .string(kid) }
        let headerText = Base64URL.encode(JSON.object(header).encoded())
        var payloadClaims: [String: JSON] = [
            "sub": .string(claims.subject), "exp": .int(claims.expires), "rooms": .array(claims.rooms.map(JSON.string)),
        ]
        if claims.admin { payloadClaims["admin"] = true }
        let payload = Base64URL.encode(JSON.object(payloadClaims).encoded())
        let signingInput = headerText + "." + payload
        return signingInput + "." + Base64URL.encode(Self.signature(of: Array(signingInput.utf8), secret: secret))
    }

    /// A token signed with the one secret of `init(secret:)`.
    public func mint(_ claims: AccessClaims) -> String {
        mint(claims, kid: nil)!
    }

    /// The token's claims, if its signature is from one of our secrets (the one its `kid`
    /// names) and it has not expired at `now`.
    public func verify(_ token: String, now: Int = Int(Date().timeIntervalSince1970)) throws(TokenError) -> AccessClaims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("expected three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), let header = try? JSONParser().parse(headerBytes) else {
            throw .malformed("the header is not base64url JSON")
        }
        guard header["alg"] == "HS256" else { throw .unsupportedAlgorithm(header["alg"]?.stringValue ?? "none") }
        let kid: String?
        switch header["kid"] {
        case nil, .null?: kid = nil
        case .string(let name)?: kid = name
        default: throw .malformed("\"kid\" must be a string")
        }
        guard let secret = kid.map({ namedSecrets[$0] }) ?? unnamedSecret else { throw .unknownKey(kid) }
        guard let given = Base64URL.decode(parts[2]) else { throw .malformed("the signature is not base64url") }
        let expected = Self.signature(of: Array("\(parts[0]).\(parts[1])".utf8), secret: secret)
        guard given.count == expected.count, CRYPTO_memcmp(given, expected, expected.count) == 0 else { throw .badSignature }
        guard let payloadBytes = Base64URL.decode(parts[1]), let payload = try? JSONParser().parse(payloadBytes) else {
            throw .malformed("the payload is not base64url JSON")
        }
        guard let expires = payload["exp"]?.intValue else { throw .malformed("no integer \"exp\" claim") }
        guard case .array(let patterns)? = payload["rooms"] else { throw .malformed("no \"rooms\" claim (a list of room patterns)") }
        let rooms = patterns.compactMap(\.stringValue)
        guard rooms.count == patterns.count else { throw .malformed("\"rooms\" must hold strings") }
        let admin: Bool
        switch payload["admin"] {
        case nil, .null?: admin = false
        case .bool(let value)?: admin = value
        default: throw .malformed("\"admin\" must be true or false")
        }
        guard now < expires else { throw .expired(at: expires, now: now) }
        return AccessClaims(subject: payload["sub"]?.stringValue ?? "", expires: expires, rooms: rooms, admin: admin, payload: payload)
    }

    private static func signature(of input: [UInt8], secret: [UInt8]) -> [UInt8] {
        HMACSHA256.mac(input, key: secret)
    }
}

/// RFC 4648 base64url without padding, as JWTs use it.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") else { return nil }
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map(Array.init)
    }
}
