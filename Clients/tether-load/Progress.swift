import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The live progress line on stderr: rewritten in place on a terminal, one line each time
/// otherwise (a log file). Off with --quiet.
final class ProgressLine {
    private let enabled: Bool
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var shown = false

    init(enabled: Bool) {
        self.enabled = enabled
    }

    func show(_ line: String) {
        guard enabled else { return }
        if isTerminal {
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
            shown = true
        } else {
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
    }

    /// Erases the line on a terminal (before the summary).
    func clear() {
        if isTerminal && shown {
            FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
            shown = false
        }
    }

    /// Once a second while actions flow: connections, rates and latency percentiles since the
    /// previous line, errors, and the server's and tether-load's CPU. Returns the figures the
    /// next line starts from.
    func showTraffic(phase: String, elapsed: Double, _ shards: ClientShards, _ probe: ServerProbes,
                     configuration: LoadConfiguration, previous: ProgressSnapshot) -> ProgressSnapshot {
        var interval = makeLatencyHistogram()
        var total = SubscriberCounters()
        for shard in shards.subscribers {
            if let report = onLoop(shard.client, { shard.report(takeInterval: true) }) {
                total.add(report.counters)
                interval.add(report.interval)
            }
        }
        let publisher = shards.publisherCounters
        let server = probe.sample(withMetrics: false)
        let now = monotonicNanos()
        let dt = max(1e-3, Double(now - previous.at) / 1e9)
        let actions = publisher?.actionsSent ?? 0
        let own = OwnUsage.now().cpuSeconds
        let failures = total.violations + total.errors + total.disconnects + total.reconnectFailures
            + (publisher.map { $0.ackMismatches + $0.errors + $0.protocolErrors + $0.disconnects } ?? 0)
        var line = String(format: "%@ %5.1fs  conn %d/%d fail %d | %.0f act/s %.0f patch/s | p50 %@ p99 %@ | errors %d",
                          phase, elapsed, total.live, configuration.clients, total.connectFailures + total.reconnectFailures,
                          Double(actions - previous.actions) / dt, Double(total.deliveries - previous.subscribers.deliveries) / dt,
                          formatMicros(interval.totalCount > 0 ? interval.valueAtPercentile(50) : nil),
                          formatMicros(interval.totalCount > 0 ? interval.valueAtPercentile(99) : nil), failures)
        if let cpu = server.cpuSeconds, let before = previous.serverCPU {
            line += String(format: " | server %.2f cores", (cpu - before) / dt)
            if let rss = server.residentBytes { line += String(format: " %.0f MiB", Double(rss) / 1_048_576) }
        }
        line += String(format: " | me %.2f cores", (own - previous.ownCPU) / dt)
        if configuration.churn > 0 { line += " | resumed \(total.resumesFromHistory)+\(total.resumesWithSnapshot)" }
        show(line)
        return ProgressSnapshot(at: now, subscribers: total, actions: actions, serverCPU: server.cpuSeconds, ownCPU: own)
    }
}

/// The figures at the previous progress line: rates are taken over the time since.
struct ProgressSnapshot {
    var at: Int
    var subscribers: SubscriberCounters
    var actions: Int
    var serverCPU: Double?
    var ownCPU: Double

    init(at: Int, subscribers: SubscriberCounters, actions: Int, serverCPU: Double?, ownCPU: Double) {
        self.at = at
        self.subscribers = subscribers
        self.actions = actions
        self.serverCPU = serverCPU
        self.ownCPU = ownCPU
    }

    /// Now, before the first line.
    init(_ shards: ClientShards, _ probe: ServerProbes) {
        self.init(at: monotonicNanos(), subscribers: shards.subscriberCounters, actions: shards.publisherCounters?.actionsSent ?? 0,
                  serverCPU: probe.sample(withMetrics: false).cpuSeconds, ownCPU: OwnUsage.now().cpuSeconds)
    }
}
