import Crypto
import Foundation
import JWTKit
import TetherJSON

/// A token's payload as jwt-kit decodes and encodes it: the JSON object as it is. Claims are read
/// from it by `TokenVerifier` only after the signature verified, and checked on the server's
/// clock (not jwt-kit's `verify(using:)`, which reads the system clock and has no leeway).
struct TokenPayload: JWTPayload {
    var json: JSON

    init(_ json: JSON) { self.json = json }

    init(from decoder: any Decoder) throws { json = try JSON(from: decoder) }

    func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// An HS256 secret as a jwt-kit algorithm the hot path can hold: jwt-kit's own HMAC key is
/// reachable only through its `JWTKeyCollection` actor (`async`), and joins are checked
/// synchronously on the socket thread. swift-crypto's HMAC, compared in constant time.
struct HS256Key: JWTAlgorithm {
    let key: SymmetricKey

    init(secret: [UInt8]) { key = SymmetricKey(data: secret) }

    var name: String { "HS256" }

    func sign(_ plaintext: some DataProtocol) throws -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: plaintext, using: key))
    }

    func verify(_ signature: some DataProtocol, signs plaintext: some DataProtocol) throws -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(Array(signature), authenticating: Array(plaintext), using: key)
    }

    /// The secret as jwt-kit's signer takes it: at least 32 bytes (shorter ones trip an
    /// assertion in debug builds). Zeros appended change nothing: HMAC pads a key shorter than
    /// the hash's block (64 bytes) with zeros itself (RFC 2104), so both sign the same.
    static func jwtKitKey(_ secret: [UInt8]) -> [UInt8] {
        secret.count >= 32 || secret.count > 64 ? secret : secret + [UInt8](repeating: 0, count: 32 - secret.count)
    }
}
