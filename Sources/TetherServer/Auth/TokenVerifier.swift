import Foundation
import JWTKit
import TetherJSON

/// Checks an access token, synchronously (joins are admitted on the socket thread, in order with
/// the connection's other requests): jwt-kit parses it and checks its signature; the key is
/// chosen here, and the claims are checked here on the server's clock.
///
/// Two kinds of keys, never mixed:
/// - HS256: this server's own secrets (`TokenAuthority`), chosen by `kid` (or the unnamed one);
/// - RS256/384/512, PS256/384/512, ES256/384/512, EdDSA: the identity provider's public keys,
///   chosen by (`iss`, `kid`) after `iss` matched the configured issuer. No default key, no trying
///   other keys: an unknown kid is refused (and triggers a rate-limited refresh).
/// Headers that point at keys (`jku`, `jwk`, `x5u`, `x5c`) are ignored: keys come only from the
/// configuration.
public struct TokenVerifier: Sendable {
    static let asymmetricAlgorithms: Set<String> = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

    public var secrets: TokenAuthority?
    public var provider: IdentityProvider?
    public var providerKeys: IdentityKeys?
    /// Seconds of tolerance for clocks apart, on `exp`, `nbf` and `iat`.
    public var leeway: Int

    public init(secrets: TokenAuthority? = nil, provider: IdentityProvider? = nil, providerKeys: IdentityKeys? = nil, leeway: Int = 30) {
        self.secrets = secrets
        self.provider = provider
        self.providerKeys = providerKeys
        self.leeway = leeway
    }

    /// The token's claims, if it verifies and is valid at `now` (seconds since 1970).
    public func verify(_ token: String, now: Int) -> Result<AccessClaims, TokenError> {
        let parser = DefaultJWTParser()
        let bytes = Array(token.utf8)
        let parsed: (header: JWTHeader, payload: TokenPayload, signature: Data)
        let signingInput: [UInt8]
        do {
            parsed = try parser.parse(bytes, as: TokenPayload.self)
            let parts = try parser.getTokenParts(bytes)
            signingInput = Array(parts.header) + [UInt8(ascii: ".")] + Array(parts.payload)
        } catch {
            return .failure(.malformed("not a JSON Web Token (three base64url parts: header, payload, signature)"))
        }
        let (header, payload, signature) = (parsed.header, parsed.payload.json, parsed.signature)
        guard case .object = payload else { return .failure(.malformed("the payload is not a JSON object")) }
        let alg = header.alg ?? "none"
        let key: any JWTAlgorithm
        let audience: String?
        switch keyFor(alg: alg, kid: header.kid, payload: payload, now: now) {
        case .failure(let error): return .failure(error)
        case .success(let found): (key, audience) = found
        }
        guard (try? key.verify(signature, signs: signingInput)) == true else { return .failure(.badSignature) }
        return claims(payload, now: now, audience: audience)
    }

    /// The key for the token's `alg` and `kid`, and the audience its issuer requires.
    private func keyFor(alg: String, kid: String?, payload: JSON, now: Int) -> Result<(any JWTAlgorithm, String?), TokenError> {
        if alg == "HS256" {
            guard let secrets else { return .failure(.unsupportedAlgorithm("HS256 (this server has no token secret; its tokens come from \(provider?.issuer ?? "nowhere"))")) }
            guard let secret = secrets.secret(for: kid) else { return .failure(.unknownKey(kid)) }
            return .success((HS256Key(secret: secret), nil))
        }
        guard Self.asymmetricAlgorithms.contains(alg) else { return .failure(.unsupportedAlgorithm(alg)) }
        guard let provider, let providerKeys else {
            return .failure(.unsupportedAlgorithm("\(alg) (no identity provider is configured: jwks-url, token-issuer)"))
        }
        // The issuer picks the key set before any kid is looked up: another issuer's token never
        // reaches these keys, whatever kid it names.
        let issuer = payload["iss"]?.stringValue
        guard issuer == provider.issuer else { return .failure(.unknownIssuer(issuer)) }
        guard let kid else { return .failure(.unknownProviderKey(issuer: provider.issuer, kid: nil)) }
        switch providerKeys.lookup(issuer: provider.issuer, kid: kid) {
        case .found(let key):
            guard key.alg == alg else { return .failure(.algorithmMismatch(kid: kid, key: key.alg, token: alg)) }
            return .success((key.algorithm, provider.audience))
        case .unknown:
            providerKeys.requestRefresh(now: now)
            return .failure(.unknownProviderKey(issuer: provider.issuer, kid: kid))
        case .notFetched(let why):
            providerKeys.requestRefresh(now: now)
            return .failure(.keysUnavailable(issuer: provider.issuer, why: why))
        }
    }

    /// Tether's claims, read once the signature verified; times with the leeway.
    private func claims(_ payload: JSON, now: Int, audience: String?) -> Result<AccessClaims, TokenError> {
        guard let expires = Self.seconds(payload["exp"]) else { return .failure(.malformed("no numeric \"exp\" claim (expiry)")) }
        let notBefore = Self.seconds(payload["nbf"])
        let issuedAt = Self.seconds(payload["iat"])
        if payload["nbf"] != nil, notBefore == nil { return .failure(.malformed("\"nbf\" must be a number")) }
        if payload["iat"] != nil, issuedAt == nil { return .failure(.malformed("\"iat\" must be a number")) }
        let rooms: [String]?
        let read: [String]?
        switch (Self.patterns(payload["rooms"]), Self.patterns(payload["read"])) {
        case (.failure, _): return .failure(.malformed("\"rooms\" must be a list of room patterns (or one space-separated text)"))
        case (_, .failure): return .failure(.malformed("\"read\" must be a list of room patterns (or one space-separated text)"))
        case (.success(let r), .success(let ro)): (rooms, read) = (r, ro)
        }
        guard rooms != nil || read != nil else { return .failure(.malformed("no \"rooms\" claim (a list of room patterns) and no \"read\" claim")) }
        let admin: Bool
        switch payload["admin"] {
        case nil, .null?: admin = false
        case .bool(let value)?: admin = value
        default: return .failure(.malformed("\"admin\" must be true or false"))
        }
        let audiences: [String]?
        switch payload["aud"] {
        case nil, .null?: audiences = nil
        case .string(let one)?: audiences = [one]
        case .array(let many)? where many.allSatisfy({ $0.stringValue != nil }): audiences = many.compactMap(\.stringValue)
        default: return .failure(.malformed("\"aud\" must be a text or a list of texts"))
        }
        guard now < expires + leeway else { return .failure(.expired(at: expires, now: now)) }
        if let notBefore, now + leeway < notBefore { return .failure(.notYetValid(at: notBefore, now: now)) }
        if let issuedAt, issuedAt > now + leeway { return .failure(.issuedInFuture(at: issuedAt, now: now)) }
        if let audience, !(audiences ?? []).contains(audience) { return .failure(.wrongAudience(expected: audience, found: audiences)) }
        return .success(AccessClaims(subject: payload["sub"]?.stringValue ?? "", expires: expires, rooms: rooms ?? [], read: read ?? [],
                                     admin: admin, notBefore: notBefore, issuedAt: issuedAt, issuer: payload["iss"]?.stringValue,
                                     audience: audiences ?? [], payload: payload))
    }

    /// A NumericDate: whole seconds, or a fraction (rounded down).
    private static func seconds(_ value: JSON?) -> Int? {
        switch value {
        case .int(let seconds)?: seconds
        case .double(let seconds)? where seconds.isFinite && abs(seconds) < 1e15: Int(seconds.rounded(.down))
        default: nil
        }
    }

    /// A list of patterns, or one text of space-separated ones (what identity providers' claim
    /// mappers often emit); nil when absent.
    private static func patterns(_ value: JSON?) -> Result<[String]?, TokenError> {
        switch value {
        case nil, .null?: return .success(nil)
        case .string(let text)?: return .success(text.split(separator: " ").map(String.init))
        case .array(let items)?:
            let texts = items.compactMap(\.stringValue)
            return texts.count == items.count ? .success(texts) : .failure(.malformed(""))
        default: return .failure(.malformed(""))
        }
    }
}
