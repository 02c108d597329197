import Foundation

/// Why a token was refused: each reason its own case and sentence, so that a client's developer
/// (and the operator reading logs) knows which part to fix.
public enum TokenError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case unsupportedAlgorithm(String)
    /// An HS256 token whose `kid` names no secret of this server (nil: it names none and the
    /// server has no unnamed secret).
    case unknownKey(String?)
    /// A token of the identity provider whose `kid` is not in its key set (a refresh has been
    /// asked for when the rate limit allows).
    case unknownProviderKey(issuer: String, kid: String?)
    /// The header's `alg` is not the algorithm of the key its `kid` names.
    case algorithmMismatch(kid: String, key: String, token: String)
    /// An asymmetric token whose `iss` is not the configured issuer (nil: it has none).
    case unknownIssuer(String?)
    /// The identity provider's keys could not be fetched yet.
    case keysUnavailable(issuer: String, why: String)
    case badSignature
    /// Expired at `at`, checked at `now` (both seconds since 1970).
    case expired(at: Int, now: Int)
    /// Not valid before `at` (`nbf`), checked at `now`.
    case notYetValid(at: Int, now: Int)
    /// Issued (`iat`) after `now`: a clock far ahead, or a forged token.
    case issuedInFuture(at: Int, now: Int)
    /// `aud` does not name this server's audience (nil: the token has no `aud`).
    case wrongAudience(expected: String, found: [String]?)

    /// Whether the same token may pass in a moment: its issuer's keys are being fetched.
    public var isTransient: Bool {
        switch self {
        case .keysUnavailable, .unknownProviderKey(_, _?): true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .malformed(let why): "malformed token: \(why)"
        case .unsupportedAlgorithm(let alg): "token algorithm \(alg) is not accepted"
        case .unknownKey(let kid?): "the token's key \"\(kid)\" (kid) is not one of this server's secrets"
        case .unknownKey(nil): "the token names no key (kid) and this server has no unnamed secret"
        case .unknownProviderKey(let issuer, let kid?):
            "the token's key \"\(kid)\" (kid) is not in the key set of \(issuer); its keys are being refreshed, try again in a moment"
        case .unknownProviderKey(let issuer, nil): "the token names no key (kid); tokens of \(issuer) must"
        case .algorithmMismatch(let kid, let key, let token): "the key \"\(kid)\" is for \(key), the token says \(token)"
        case .unknownIssuer(let issuer?): "the token's issuer \"\(issuer)\" (iss) is not the identity provider this server trusts"
        case .unknownIssuer(nil): "the token has no issuer (iss); tokens signed with public keys must name theirs"
        case .keysUnavailable(let issuer, let why): "the keys of \(issuer) could not be fetched yet (\(why)); try again later"
        case .badSignature: "token signature does not match"
        case .expired(let at, let now): "token expired at \(Self.utc(at)) (\(Self.elapsed(now - at)) ago)"
        case .notYetValid(let at, let now): "token not valid before \(Self.utc(at)) (nbf, \(Self.elapsed(at - now)) from now)"
        case .issuedInFuture(let at, let now): "token issued in the future, at \(Self.utc(at)) (iat, \(Self.elapsed(at - now)) from now)"
        case .wrongAudience(let expected, let found?):
            "the token's audience (aud) \(found.map { "\"\($0)\"" }.joined(separator: ", ")) does not include \"\(expected)\""
        case .wrongAudience(let expected, nil): "the token has no audience (aud); this server needs \"\(expected)\""
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
