import Foundation

/// The summary for people: one row per figure (for a run that got past its set-up).
extension RunOutcome {
    func printSummary(toStandardError: Bool) {
        let c = configuration
        var lines: [String] = []
        func row(_ name: String, _ value: String) {
            lines.append("  " + name.padding(toLength: 15, withPad: " ", startingAt: 0) + value)
        }
        func percent(_ x: Double) -> String { String(format: "%.2f %%", x * 100) }
        func number(_ x: Double) -> String {
            let formatter = NumberFormatter()
            formatter.numberStyle = .decimal
            formatter.maximumFractionDigits = x < 100 ? 1 : 0
            return formatter.string(from: NSNumber(value: x)) ?? String(x)
        }
        func mib(_ bytes: Int?) -> String { bytes.map { String(format: "%.1f MiB", Double($0) / 1_048_576) } ?? "n/a" }

        lines.append("tether-load \(label.map { "[\($0)] " } ?? "")\(c.urls.joined(separator: ",")): \(c.clients) subscribers in \(c.rooms) room\(c.rooms == 1 ? "" : "s") (\(c.roomPrefix)*), "
            + "\(c.publishers) publisher\(c.publishers == 1 ? "" : "s") at \(number(c.rate)) actions/s, "
            + "\(number(c.duration)) s measured after \(number(c.warmup)) s warm-up, payload \(c.payloadBytes) B"
            + (c.compression ? ", compression offered" : "")
            + (c.churn > 0 ? ", churn \(number(c.churn))/s" : ""))
        row("connected", "\(connected)/\(c.clients) in \(String(format: "%.2f", connectSeconds)) s"
            + (connectTimes.totalCount > 0 ? " (each: p50 \(formatMicros(connectTimes.valueAtPercentile(50))), p99 \(formatMicros(connectTimes.valueAtPercentile(99))))" : ""))
        if c.rate > 0 {
            row("offered", "\(number(offeredActionsPerSecond)) actions/s = \(number(offeredDeliveriesPerSecond)) deliveries/s")
            row("delivered", "\(number(deliveredPerSecond)) patches/s\(deliveryRatio.map { " (\(percent($0)) of offered)" } ?? "") in \(number(framesPerSecond)) frames/s")
            if latency.totalCount > 0 {
                row("latency", "p50 \(formatMicros(latency.valueAtPercentile(50)))  p90 \(formatMicros(latency.valueAtPercentile(90)))  "
                    + "p99 \(formatMicros(latency.valueAtPercentile(99)))  p99.9 \(formatMicros(latency.valueAtPercentile(99.9)))  "
                    + "max \(formatMicros(latency.max))  (\(latency.totalCount) samples)")
            }
            row("acks", "\(publishers.acks)/\(publishers.actionsSent)" + (ackTimes.totalCount > 0
                ? ", round trip p50 \(formatMicros(ackTimes.valueAtPercentile(50))) p99 \(formatMicros(ackTimes.valueAtPercentile(99)))" : ""))
        }
        row("checks", "lost \(lost)  duplicates \(subscribers.duplicates)  gaps \(subscribers.gaps)  out of order \(subscribers.outOfOrder)  "
            + "protocol errors \(subscribers.protocolErrors + publishers.protocolErrors)  errors \(subscribers.errors + publishers.errors)")
        if subscribers.resyncs > 0 || subscribers.skippedBySnapshot > 0 {
            row("resyncs", "\(subscribers.resyncs) snapshots mid-stream, \(subscribers.skippedBySnapshot) sequence numbers skipped by snapshots")
        }
        if c.churn > 0 || subscribers.reconnects > 0 {
            row("reconnects", "\(subscribers.reconnects) (churn requested \(churnRequested), missed \(subscribers.churnMissed), unplanned \(subscribers.disconnects)); "
                + "resumed from history \(subscribers.resumesFromHistory), with a snapshot \(subscribers.resumesWithSnapshot)")
        }
        if let cpu = serverCPUSeconds {
            var text = String(format: "CPU %.2f cores", cpu / serverWindowSeconds)
            if windowDeliveries > 0 { text += String(format: " (%.2f µs per delivery)", cpu * 1e6 / Double(windowDeliveries)) }
            text += ", RSS \(mib(serverEnd?.residentBytes)) (peak \(mib(serverEnd?.peakResidentBytes)))"
            text += serverPids.isEmpty ? " [/metrics]" : " [" + serverPids.map { "/proc/\($0)" }.joined(separator: ", ") + "]"
            row("server", text)
        } else {
            row("server", "no figures (neither /proc nor /metrics)")
        }
        if let perConnection = rssGrowthPerConnection {
            row("server memory", String(format: "RSS %@ before, %@ with %d connections: %.1f KiB per connection",
                                        mib(serverBefore?.residentBytes), mib(serverAfterConnect?.residentBytes), connected, perConnection / 1024))
        }
        if let frames = serverMetricDelta("tether_frames_sent_total"), let deliveries = serverMetricDelta("tether_patch_deliveries_total") {
            row("server says", "\(number(deliveries / serverWindowSeconds)) deliveries/s in \(number(frames / serverWindowSeconds)) frames/s, "
                + "merged frames \(number(serverMetricDelta("tether_merged_patch_frames_total") ?? 0)), "
                + (serverMetricDelta("tether_bytes_sent_total").map { "\(number($0 / serverWindowSeconds / 1024)) KiB/s sent, " } ?? "")
                + "queue overflows \(number(serverMetricDelta("tether_send_queue_overflows_total") ?? 0))")
        }
        if let own = ownCPUSeconds {
            var text = String(format: "CPU %.2f cores", own / ownWindowSeconds)
            if windowDeliveries > 0 { text += String(format: " (%.2f µs per delivery)", own * 1e6 / Double(windowDeliveries)) }
            if let busiest = busiestThreadShare { text += String(format: ", busiest loop thread %.0f %%", busiest * 100) }
            text += ", \(c.threads) subscriber thread\(c.threads == 1 ? "" : "s"), poll batching \(c.batchNanos / 1000) µs"
            row("tether-load", text)
            if let busiest = busiestThreadShare, busiest > 0.9 {
                row("", "warning: a tether-load loop thread was over 90 % busy; the figures may measure tether-load, not the server")
            }
        }
        if c.rate > 0 { row("drain", String(format: "%.2f s after the last action", drainSeconds)) }
        for sample in samples.prefix(8) { row("seen", sample) }
        let failed = failures
        row("result", failed.isEmpty ? "OK: nothing lost, duplicated or out of order; every action acked"
            : "FAILED: " + failed.joined(separator: ", "))
        let text = lines.joined(separator: "\n") + "\n"
        if toStandardError {
            FileHandle.standardError.write(Data(text.utf8))
        } else {
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}
