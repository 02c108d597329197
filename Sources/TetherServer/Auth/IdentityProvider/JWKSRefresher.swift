import Foundation
import Logging

/// Fetches the identity provider's key set at start, then every `refresh`, and sooner when a
/// token names an unknown kid (`IdentityKeys.requestRefresh`, rate-limited there). A failed
/// fetch keeps the last good keys and is retried with backoff (1 s doubling up to `refresh`).
final class JWKSRefresher: Sendable {
    let provider: IdentityProvider
    let keys: IdentityKeys
    let http: any OutboundHTTP
    let logger: Logger
    let metrics: ServerMetrics?

    /// Largest key set accepted (a provider's is a few KiB; checkKeys says the same).
    static let maxBytes = 256 << 10

    init(provider: IdentityProvider, keys: IdentityKeys, http: any OutboundHTTP, logger: Logger, metrics: ServerMetrics? = nil) {
        self.metrics = metrics
        self.provider = provider
        self.keys = keys
        self.http = http
        self.logger = logger
    }

    /// Until cancelled.
    func run() async {
        let clock = ContinuousClock()
        var retry = Duration.seconds(1)
        while !Task.isCancelled {
            let next: ContinuousClock.Instant
            switch await fetch() {
            case .success:
                retry = .seconds(1)
                next = clock.now + provider.refresh
            case .failure:
                next = clock.now + retry
                retry = min(retry * 2, provider.refresh)
            }
            // Polled: a refresh request is a flag set on a socket thread, which must not wait.
            while clock.now < next, !Task.isCancelled, !keys.takeRefreshRequest() {
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// One fetch; the keys replace the issuer's on success.
    @discardableResult
    func fetch() async -> Result<Int, JWKSError> {
        let result = await Self.fetch(provider, http: http)
        switch result {
        case .success(let loaded):
            keys.replace(issuer: provider.issuer, with: loaded.keys)
            metrics?.jwksFetched.increment()
            metrics?.jwksKeys.set(Double(loaded.keys.count))
            for skipped in loaded.skipped { logger.warning("JWKS \(provider.jwksURL): key \(skipped); skipped") }
            logger.info("JWKS \(provider.jwksURL): \(loaded.keys.count) keys for \(provider.issuer) (\(loaded.keys.keys.sorted().joined(separator: ", ")))")
            return .success(loaded.keys.count)
        case .failure(let error):
            keys.recordFailure(error.description)
            metrics?.jwksFetchFailed.increment()
            logger.warning("JWKS \(provider.jwksURL): \(error.description); keeping the keys fetched before, if any")
            return .failure(error)
        }
    }

    /// Fetches and loads the key set, without touching any cache (for `tetherd check` too).
    static func fetch(_ provider: IdentityProvider, http: any OutboundHTTP) async -> Result<JWKSDocument.Loaded, JWKSError> {
        let response: OutboundResponse
        do {
            response = try await http.send(OutboundRequest(url: provider.jwksURL, headers: [("Accept", "application/json")], timeout: .seconds(10)))
        } catch {
            return .failure(JWKSError("fetch failed: \(error.description)"))
        }
        guard response.status == 200 else { return .failure(JWKSError("fetch answered HTTP \(response.status)")) }
        do throws(JWKSError) {
            return .success(try await JWKSDocument.load(response.body))
        } catch {
            return .failure(error)
        }
    }
}

extension IdentityProvider {
    /// One fetch of the key set, as `tetherd check` reports it: the kids it would use, or why
    /// not. Keys it would skip are named too.
    public func checkKeys(http: any OutboundHTTP = URLSessionOutboundHTTP(maxResponseBytes: 256 << 10)) async -> Result<String, JWKSCheckError> {
        switch await JWKSRefresher.fetch(self, http: http) {
        case .success(let loaded) where loaded.keys.isEmpty:
            return .failure(JWKSCheckError(description: "jwks-url \(jwksURL): no usable key\(loaded.skipped.isEmpty ? "" : " (" + loaded.skipped.joined(separator: "; ") + ")")"))
        case .success(let loaded):
            let skipped = loaded.skipped.isEmpty ? "" : "; skipped: " + loaded.skipped.joined(separator: "; ")
            return .success("jwks-url \(jwksURL): \(loaded.keys.count) key\(loaded.keys.count == 1 ? "" : "s") for \(issuer) (\(loaded.keys.keys.sorted().joined(separator: ", ")))\(skipped)")
        case .failure(let error):
            return .failure(JWKSCheckError(description: "jwks-url \(jwksURL): \(error.description); the provider's tokens are refused until a fetch works"))
        }
    }
}

public struct JWKSCheckError: Error, CustomStringConvertible {
    public let description: String
}
