import Foundation
import JWTKit
import Synchronization

/// The identity provider this server trusts (`jwks-url`, `token-issuer`, `token-audience`).
public struct IdentityProvider: Sendable, Equatable {
    /// Where its public keys are published (a JWKS document).
    public var jwksURL: URL
    /// Its tokens' exact `iss`: binds the keys from `jwksURL` to the tokens they may check.
    public var issuer: String
    /// When set, a token's `aud` must include it.
    public var audience: String?
    /// How often the key set is fetched again.
    public var refresh: Duration
    /// At most one extra fetch per this many seconds for tokens with an unknown `kid`.
    public var minRefreshInterval: Duration

    public init(jwksURL: URL, issuer: String, audience: String? = nil, refresh: Duration = .seconds(600),
                minRefreshInterval: Duration = .seconds(30)) {
        self.jwksURL = jwksURL
        self.issuer = issuer
        self.audience = audience
        self.refresh = refresh
        self.minRefreshInterval = minRefreshInterval
    }
}

/// A public key from a key set, ready to check signatures synchronously.
struct VerificationKey: Sendable {
    /// jwt-kit's key for exactly one algorithm.
    let algorithm: any JWTAlgorithm
    /// "RS256", "ES256", "EdDSA": what a token's `alg` must say.
    let alg: String
}

/// Keys are cached by issuer *and* kid: kids are not unique across providers ("default",
/// "2026-01"), and a cache keyed by kid alone lets one issuer's key check another's tokens
/// (CVE-2026-49998 in Centrifugo).
struct KeyName: Hashable, Sendable {
    let issuer: String
    let kid: String
}

/// The identity provider's keys as last fetched, shared by the socket threads (which read them
/// to verify tokens, synchronously) and the refresher (which replaces them). One lock, held for a
/// dictionary lookup or a swap.
public final class IdentityKeys: Sendable {
    struct State {
        var keys: [KeyName: VerificationKey] = [:]
        /// Issuers whose key set has been fetched at least once.
        var fetched: Set<String> = []
        var lastError: String?
        /// Seconds since 1970 of the last fetch asked for by an unknown kid.
        var lastDemandedRefresh: Int?
        /// A refresh is wanted now (an unknown kid, within the rate limit).
        var refreshWanted = false
    }

    enum Lookup {
        case found(VerificationKey)
        case unknown
        case notFetched(why: String)
    }

    private let state = Mutex(State())
    let minRefreshInterval: Int

    public init(minRefreshInterval: Duration = .seconds(30)) {
        self.minRefreshInterval = Int(minRefreshInterval.components.seconds)
    }

    func lookup(issuer: String, kid: String) -> Lookup {
        state.withLock { state in
            if let key = state.keys[KeyName(issuer: issuer, kid: kid)] { return .found(key) }
            return state.fetched.contains(issuer) ? .unknown : .notFetched(why: state.lastError ?? "first fetch pending")
        }
    }

    /// Asks the refresher for a fetch, unless one was asked for within `minRefreshInterval`
    /// seconds. True when asked.
    @discardableResult
    func requestRefresh(now: Int) -> Bool {
        state.withLock { state in
            if let last = state.lastDemandedRefresh, now - last < minRefreshInterval { return false }
            state.lastDemandedRefresh = now
            state.refreshWanted = true
            return true
        }
    }

    /// Takes a pending refresh request, if any (the refresher polls).
    func takeRefreshRequest() -> Bool {
        state.withLock { state in
            defer { state.refreshWanted = false }
            return state.refreshWanted
        }
    }

    /// A successful fetch replaces the issuer's keys: a key gone from the set is revoked.
    func replace(issuer: String, with keys: [String: VerificationKey]) {
        state.withLock { state in
            state.keys = state.keys.filter { $0.key.issuer != issuer }
            for (kid, key) in keys { state.keys[KeyName(issuer: issuer, kid: kid)] = key }
            state.fetched.insert(issuer)
            state.lastError = nil
        }
    }

    /// A failed fetch keeps the last good keys.
    func recordFailure(_ why: String) {
        state.withLock { $0.lastError = why }
    }

    /// The kids held for `issuer`, sorted (for logs and tests).
    public func kids(of issuer: String) -> [String] {
        state.withLock { state in state.keys.keys.filter { $0.issuer == issuer }.map(\.kid).sorted() }
    }
}
