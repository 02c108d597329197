import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TetherJSON

/// Whether the NATS servers a node joins make each JetStream write durable before they ack it.
///
/// A cluster's ack is a JetStream publish ack: two of three servers hold the entry, but only in
/// their page cache unless JetStream fsyncs each write (`sync_interval: always`, nats-server 2.10
/// and later). Under the default (an fsync every 2 minutes) a power loss of the servers together
/// can lose acknowledged actions. A client connection does not say how a server syncs; its
/// monitoring endpoint's `/varz` does (`jetstream.config.sync_always`), so tetherd reads it there
/// when told where (`--nats-monitoring`), at start and in `tetherd check`.
public enum NATSDurability {
    /// What one server's `/varz` says.
    public enum Finding: Equatable, Sendable {
        /// JetStream fsyncs every write before its ack.
        case syncsEveryWrite(server: String, version: String)
        /// JetStream fsyncs on a timer (`interval`): acks are not durable against power loss.
        case syncsOnTimer(server: String, version: String, interval: Duration?)
        /// JetStream is off on that server.
        case noJetStream(server: String, version: String)
        case unreadable(url: String, reason: String)

        public var isDurable: Bool { if case .syncsEveryWrite = self { true } else { false } }

        public var description: String {
            switch self {
            case .syncsEveryWrite(let server, let version):
                return "NATS server \(server) (\(version)) fsyncs every JetStream write before its ack"
            case .syncsOnTimer(let server, let version, let interval):
                let every = interval.map { " every \(Int($0.components.seconds)) s" } ?? " on a timer"
                let fix = NATSDurability.supportsSyncAlways(version)
                    ? "set `sync_interval: always` in its jetstream block"
                    : "nats-server \(version) cannot fsync each write: upgrade to 2.10 or later and set `sync_interval: always`"
                return "NATS server \(server) (\(version)) fsyncs JetStream\(every), not each write: an acknowledged action can be lost if the NATS servers lose power together; \(fix) (docs/CLUSTER.md, \"What an ack promises\")"
            case .noJetStream(let server, let version):
                return "NATS server \(server) (\(version)) has JetStream off"
            case .unreadable(let url, let reason):
                return "cannot read \(url)/varz (\(reason)): whether that NATS server fsyncs each write is unknown"
            }
        }
    }

    /// Reads `/varz` at each monitoring URL (`http://host:port`), at most `timeout` each, together.
    public static func check(monitoringURLs: [String], timeout: Duration = .seconds(3)) async -> [Finding] {
        await withTaskGroup(of: (Int, Finding).self) { group in
            for (index, url) in monitoringURLs.enumerated() {
                group.addTask { (index, await read(url, timeout: timeout)) }
            }
            var findings: [(Int, Finding)] = []
            for await finding in group { findings.append(finding) }
            return findings.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    private static func read(_ base: String, timeout: Duration) async -> Finding {
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        guard let url = URL(string: trimmed + "/varz"), url.scheme == "http" || url.scheme == "https" else {
            return .unreadable(url: base, reason: "not an http:// URL")
        }
        var request = URLRequest(url: url)
        request.timeoutInterval = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        do {
            let (data, response) = try await URLSession.shared.data(for: request)
            guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
                return .unreadable(url: trimmed, reason: "HTTP status \((response as? HTTPURLResponse)?.statusCode ?? 0)")
            }
            let varz = try JSONParser().parse(Array(data))
            return assess(varz: varz, url: trimmed)
        } catch {
            return .unreadable(url: trimmed, reason: "\(error.localizedDescription)")
        }
    }

    /// A `/varz` document's answer. nats-server before 2.10 has no `sync_interval`: it fsyncs
    /// JetStream on a timer.
    public static func assess(varz: JSON, url: String) -> Finding {
        let version = varz["version"]?.stringValue ?? "unknown version"
        let server = varz["server_name"]?.stringValue ?? url
        guard let jetStream = varz["jetstream"]?["config"] else { return .noJetStream(server: server, version: version) }
        if jetStream["sync_always"]?.boolValue == true { return .syncsEveryWrite(server: server, version: version) }
        let interval = jetStream["sync_interval"]?.intValue.map { Duration.nanoseconds($0) }
        return .syncsOnTimer(server: server, version: version, interval: interval)
    }

    /// `sync_interval` (and so `always`) came in nats-server 2.10.
    static func supportsSyncAlways(_ version: String) -> Bool {
        let parts = version.split(separator: ".").compactMap { Int($0.prefix { $0.isNumber }) }
        guard parts.count >= 2 else { return true }
        return parts[0] > 2 || (parts[0] == 2 && parts[1] >= 10)
    }
}
