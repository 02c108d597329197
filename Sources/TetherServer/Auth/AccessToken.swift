import COpenSSL
import Foundation
import TetherJSON

/// The claims of a Tether access token: who (`sub`), until when (`exp`, seconds since 1970),
/// and which rooms (`rooms`: patterns such as `counter`, `todo:*` or `*`).
public struct AccessClaims: Equatable, Sendable {
    public var subject: String
    public var expires: Int
    public var rooms: [String]

    public init(subject: String, expires: Int, rooms: [String]) {
        self.subject = subject
        self.expires = expires
        self.rooms = rooms
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
    case badSignature
    case expired(at: Int)

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed token: \(why)"
        case .unsupportedAlgorithm(let alg): return "token algorithm \(alg) is not accepted (HS256 only)"
        case .badSignature: return "token signature does not match"
        case .expired(let at): return "token expired at \(at) (seconds since 1970)"
        }
    }
}

/// Signs and checks HS256 JSON Web Tokens with one shared secret, using OpenSSL's HMAC.
public struct TokenAuthority: Sendable {
    private let secret: [UInt8]

    public init(secret: [UInt8]) {
        self.secret = secret
    }

    public func mint(_ claims: AccessClaims) -> String {
        let header = Base64URL.encode(JSON.object(["alg": "HS256", "typ": "JWT"]).encoded())
        let payload = Base64URL.encode(JSON.object([
            "sub": .string(claims.subject), "exp": .int(claims.expires), "rooms": .array(claims.rooms.map(JSON.string)),
        ]).encoded())
        let signingInput = header + "." + payload
        return signingInput + "." + Base64URL.encode(signature(of: Array(signingInput.utf8)))
    }

    /// The token's claims, if its signature is ours and it has not expired at `now`.
    public func verify(_ token: String, now: Int = Int(Date().timeIntervalSince1970)) throws(TokenError) -> AccessClaims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("expected three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), let header = try? JSONParser().parse(headerBytes) else {
            throw .malformed("the header is not base64url JSON")
        }
        guard header["alg"] == "HS256" else { throw .unsupportedAlgorithm(header["alg"]?.stringValue ?? "none") }
        guard let given = Base64URL.decode(parts[2]) else { throw .malformed("the signature is not base64url") }
        let expected = signature(of: Array("\(parts[0]).\(parts[1])".utf8))
        guard given.count == expected.count, CRYPTO_memcmp(given, expected, expected.count) == 0 else { throw .badSignature }
        guard let payloadBytes = Base64URL.decode(parts[1]), let payload = try? JSONParser().parse(payloadBytes) else {
            throw .malformed("the payload is not base64url JSON")
        }
        guard let expires = payload["exp"]?.intValue else { throw .malformed("no integer \"exp\" claim") }
        guard case .array(let patterns)? = payload["rooms"] else { throw .malformed("no \"rooms\" claim (a list of room patterns)") }
        let rooms = patterns.compactMap(\.stringValue)
        guard rooms.count == patterns.count else { throw .malformed("\"rooms\" must hold strings") }
        guard now < expires else { throw .expired(at: expires) }
        return AccessClaims(subject: payload["sub"]?.stringValue ?? "", expires: expires, rooms: rooms)
    }

    private func signature(of input: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = secret.withUnsafeBytes { key in
            input.withUnsafeBytes { data in
                HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), data.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count, &output, &length)
            }
        }
        return Array(output[..<Int(length)])
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
