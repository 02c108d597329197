import Logging
import TetherTransport

/// What a reload changed, and what it could not.
public struct ReloadReport: Sendable, Equatable {
    /// One entry per applied change: "max-rooms 10000 -> 500", "certificate (serial 1A2B)".
    public var applied: [String] = []
    /// Settings that differ in the new configuration but only take effect on a restart; they
    /// keep their running values.
    public var needRestart: [String] = []
}

extension ServerConfiguration {
    /// These settings with every reloadable one taken from `new` (the options marked
    /// `reloadable` in `options`; a test checks the two agree). Turning TLS on or off needs a
    /// restart: the certificate paths are taken only when both have TLS.
    public func reloading(from new: ServerConfiguration) -> ServerConfiguration {
        var result = self
        result.logLevel = new.logLevel
        result.maxConnectionsPerIP = new.maxConnectionsPerIP
        result.stuckClientTimeout = new.stuckClientTimeout
        result.maxActionsPerSecond = new.maxActionsPerSecond
        result.actionBurst = new.actionBurst
        result.maxRoomsPerConnection = new.maxRoomsPerConnection
        result.maxRooms = new.maxRooms
        result.maxRoomsPerKind = new.maxRoomsPerKind
        result.roomExpiry = new.roomExpiry
        result.auth = new.auth
        result.authSecretFile = new.authSecretFile
        result.authSecretsFile = new.authSecretsFile
        result.webhooks = new.webhooks
        result.webhooksText = new.webhooksText
        if tls != nil, new.tls != nil {
            result.tlsCertificatePath = new.tlsCertificatePath
            result.tlsKeyPath = new.tlsKeyPath
        }
        return result
    }

    /// Compares with `new`, option by option, as `reload` reports it.
    func reloadReport(to new: ServerConfiguration) -> ReloadReport {
        var report = ReloadReport()
        let effective = reloading(from: new)
        for option in Self.options where !option.isHidden && !option.key.hasPrefix("auth-secret") {
            let (old, wanted, applied) = (option.value(in: self), option.value(in: new), option.value(in: effective))
            guard old != wanted else { continue }
            if applied == wanted {
                report.applied.append("\(option.key) \(old ?? "unset") -> \(wanted ?? "unset")")
            } else {
                report.needRestart.append(option.key)
            }
        }
        if auth != new.auth {
            report.applied.append("token secrets " + (new.auth.map(\.summary) ?? "none (auth off)"))
        }
        return report
    }
}

extension TokenAuthority {
    /// Which secrets, never what they are: "unnamed + kids 2026-01, 2026-04".
    var summary: String {
        var parts: [String] = []
        if hasUnnamedSecret { parts.append("unnamed") }
        if !keyNames.isEmpty { parts.append("kids " + keyNames.joined(separator: ", ")) }
        return parts.isEmpty ? "none" : parts.joined(separator: " + ")
    }
}

extension TetherServer {
    /// Applies `new`'s reloadable settings while clients stay connected: limits and token
    /// secrets from the next request on, the TLS certificate and key (re-read even when the
    /// paths are unchanged, as after a renewal) for handshakes from now on. Everything else
    /// keeps its running value and is listed in the report's `needRestart`. Throws (changing
    /// nothing) when the result would be invalid or the certificate can't be loaded. Logs one
    /// line for what changed and one for what needs a restart.
    @discardableResult
    public func reload(_ new: ServerConfiguration) async throws(ConfigurationError) -> ReloadReport {
        let running = configuration
        let effective = running.reloading(from: new)
        try ConfigurationLoader.validate(effective)
        if let problem = Self.roomExpiryProblem(in: effective, kinds: kindScopes) { throw .invalid(problem) }
        var report = running.reloadReport(to: new)
        if let tls = effective.tls, port != nil {
            do {
                let serial = try await transport.reloadCertificate(tls)
                report.applied.append("certificate \(tls.certificatePath) (serial \(serial))")
            } catch {
                throw .invalid(error.description)
            }
        }
        self.running.withLock { $0 = effective }
        rooms.reconfigure(effective)
        rooms.webhooks?.reconfigure(effective.webhooks)
        for hub in hubs { hub.queue.execute { hub.reconfigure(effective) } }
        logger.notice("reloaded: \(report.applied.isEmpty ? "nothing changed" : report.applied.joined(separator: ", "))")
        if !report.needRestart.isEmpty {
            logger.warning("reload: \(report.needRestart.joined(separator: ", ")) changed but only take effect on a restart; keeping the running values")
        }
        return report
    }
}
