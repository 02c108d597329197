import Foundation
import Histogram
import TetherJSON

/// Everything a run measured, and how it is shown: a table for people, one JSON line for scripts.
struct RunOutcome {
    let configuration: LoadConfiguration
    let label: String?
    var fileLimit = 0
    /// Server unreachable, connections that did not open...: exit status 2.
    var setupErrors: [String] = []
    var serverSource = "none"
    var serverPid: Int32?
    var serverBefore: ServerSample?
    var serverAfterConnect: ServerSample?
    var serverStart: ServerSample?
    var serverEnd: ServerSample?
    var connectSeconds = 0.0
    var connected = 0
    var connectTimes = makeLatencyHistogram()
    /// The measurement window as each side saw it (monotonic ns): rates divide by their own.
    var publisherWindow = Window()
    var subscriberWindow = Window()
    var ownStart: OwnUsage?
    var ownEnd: OwnUsage?
    var subscribersAtStart = SubscriberCounters()
    var subscribersAtEnd = SubscriberCounters()
    var publishersAtStart = PublisherCounters()
    var publishersAtEnd = PublisherCounters()
    /// Patch latency (µs) over the measurement window.
    var latency = makeLatencyHistogram()
    /// Action round trips (µs) over the measurement window.
    var ackTimes = makeLatencyHistogram()
    /// Final totals over the whole run.
    var subscribers = SubscriberCounters()
    var publishers = PublisherCounters()
    /// Deliveries still missing when the drain ended.
    var undelivered = 0
    var drainSeconds = 0.0
    var churnRequested = 0
    var interrupted = false
    var samples: [String] = []

    init(configuration: LoadConfiguration, label: String?) {
        self.configuration = configuration
        self.label = label
    }

    // MARK: Derived figures

    struct Window {
        var lowerBound = 0
        var upperBound = 0
        var seconds: Double { max(1e-9, Double(upperBound - lowerBound) / 1e9) }
    }

    /// The measurement window, from the subscribers' point of view.
    var windowSeconds: Double { subscriberWindow.seconds }
    var offeredActionsPerSecond: Double { Double(publishersAtEnd.actionsSent - publishersAtStart.actionsSent) / publisherWindow.seconds }
    var offeredDeliveriesPerSecond: Double { Double(publishersAtEnd.deliveriesOffered - publishersAtStart.deliveriesOffered) / publisherWindow.seconds }
    var windowDeliveries: Int { subscribersAtEnd.deliveries - subscribersAtStart.deliveries }
    var deliveredPerSecond: Double { Double(windowDeliveries) / windowSeconds }
    var framesPerSecond: Double { Double(subscribersAtEnd.patchFrames - subscribersAtStart.patchFrames) / windowSeconds }
    var serverWindowSeconds: Double {
        guard let start = serverStart, let end = serverEnd else { return windowSeconds }
        return max(1e-9, Double(end.at - start.at) / 1e9)
    }
    var ownWindowSeconds: Double {
        guard let start = ownStart, let end = ownEnd else { return windowSeconds }
        return max(1e-9, Double(end.at - start.at) / 1e9)
    }
    var deliveryRatio: Double? { offeredDeliveriesPerSecond > 0 ? deliveredPerSecond / offeredDeliveriesPerSecond : nil }
    /// Lost in the stream plus never delivered by the end of the drain.
    var lost: Int { subscribers.lost + undelivered }
    var unacked: Int { max(0, publishers.outstanding) }

    var serverCPUSeconds: Double? {
        guard let end = serverEnd?.cpuSeconds, let start = serverStart?.cpuSeconds else { return nil }
        return end - start
    }

    var ownCPUSeconds: Double? {
        guard let end = ownEnd, let start = ownStart else { return nil }
        return end.cpuSeconds - start.cpuSeconds
    }

    var busiestThreadShare: Double? {
        guard let end = ownEnd, let start = ownStart else { return nil }
        return end.busiestThreadSeconds(since: start) / ownWindowSeconds
    }

    var rssGrowthPerConnection: Double? {
        guard connected > 0, let before = serverBefore?.residentBytes, let after = serverAfterConnect?.residentBytes else { return nil }
        return Double(after - before) / Double(connected)
    }

    func serverMetricDelta(_ name: String) -> Double? {
        guard let end = serverEnd?.metrics[name], let start = serverStart?.metrics[name] else { return nil }
        return end - start
    }

    /// Reasons the run failed its checks (exit status 1).
    var failures: [String] {
        var list: [String] = []
        func check(_ count: Int, _ what: String) { if count > 0 { list.append("\(count) \(what)") } }
        check(subscribers.lost, "sequence numbers lost in the stream")
        check(undelivered, "deliveries missing after the drain")
        check(subscribers.duplicates, "duplicated deliveries")
        check(subscribers.gaps, "version gaps")
        check(subscribers.outOfOrder, "out-of-order messages")
        check(subscribers.protocolErrors, "protocol errors")
        check(subscribers.errors, "error messages to subscribers")
        check(subscribers.disconnects, "unplanned disconnects")
        check(subscribers.reconnectFailures, "failed reconnects")
        check(publishers.ackMismatches, "mismatched acks")
        check(unacked, "actions never acked")
        check(publishers.errors, "actions answered with an error")
        check(publishers.protocolErrors, "publisher protocol errors")
        check(publishers.disconnects, "publisher disconnects")
        if interrupted { list.append("interrupted") }
        return list
    }

    var exitStatus: Int32 {
        if !setupErrors.isEmpty { return Outcome.usage }
        return failures.isEmpty ? Outcome.ok : Outcome.violations
    }

    // MARK: Table

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

        lines.append("tether-load \(label.map { "[\($0)] " } ?? "")\(c.url): \(c.clients) subscribers in \(c.rooms) room\(c.rooms == 1 ? "" : "s"), "
            + "\(c.publishers) publisher\(c.publishers == 1 ? "" : "s") at \(number(c.rate)) actions/s, "
            + "\(number(c.duration)) s measured after \(number(c.warmup)) s warm-up, payload \(c.payloadBytes) B"
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
            text += serverPid.map { " [/proc/\($0)]" } ?? " [/metrics]"
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
        for error in setupErrors { row("setup error", error) }
        for sample in samples.prefix(8) { row("seen", sample) }
        let failed = failures
        row("result", !setupErrors.isEmpty ? "SETUP FAILED (exit 2)"
            : failed.isEmpty ? "OK: nothing lost, duplicated or out of order; every action acked"
            : "FAILED: " + failed.joined(separator: ", "))
        let text = lines.joined(separator: "\n") + "\n"
        if toStandardError {
            FileHandle.standardError.write(Data(text.utf8))
        } else {
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }

    // MARK: JSON

    func printJSON() {
        let c = configuration
        var out = JSONLine()
        out.add("label", label)
        out.add("ok", exitStatus == 0)
        out.add("exit_code", Int(exitStatus))
        out.add("url", c.url)
        out.add("clients", c.clients)
        out.add("rooms", c.rooms)
        out.add("publishers", c.publishers)
        out.add("rate", c.rate)
        out.add("duration_s", c.duration)
        out.add("warmup_s", c.warmup)
        out.add("payload_bytes", c.payloadBytes)
        out.add("churn_per_s", c.churn)
        out.add("threads", c.threads)
        out.add("batch_us", c.batchNanos / 1000)
        out.add("connected", connected)
        out.add("connect_failures", subscribers.connectFailures)
        out.add("connect_s", connectSeconds)
        out.add("connect_p50_ms", connectTimes.totalCount > 0 ? Double(connectTimes.valueAtPercentile(50)) / 1000 : nil)
        out.add("connect_p99_ms", connectTimes.totalCount > 0 ? Double(connectTimes.valueAtPercentile(99)) / 1000 : nil)
        out.add("window_s", windowSeconds)
        out.add("offered_actions_per_s", offeredActionsPerSecond)
        out.add("offered_deliveries_per_s", offeredDeliveriesPerSecond)
        out.add("delivered_per_s", deliveredPerSecond)
        out.add("delivery_ratio", deliveryRatio)
        out.add("frames_per_s", framesPerSecond)
        let hasLatency = latency.totalCount > 0
        out.add("latency_samples", Int(latency.totalCount))
        for (key, p) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9)] {
            out.add("latency_\(key)_ms", hasLatency ? Double(latency.valueAtPercentile(p)) / 1000 : nil)
        }
        out.add("latency_max_ms", hasLatency ? Double(latency.max) / 1000 : nil)
        out.add("ack_p50_ms", ackTimes.totalCount > 0 ? Double(ackTimes.valueAtPercentile(50)) / 1000 : nil)
        out.add("ack_p99_ms", ackTimes.totalCount > 0 ? Double(ackTimes.valueAtPercentile(99)) / 1000 : nil)
        out.add("actions_sent", publishers.actionsSent)
        out.add("acks", publishers.acks)
        out.add("unacked", unacked)
        out.add("ack_mismatches", publishers.ackMismatches)
        out.add("deliveries", subscribers.deliveries)
        out.add("lost", lost)
        out.add("undelivered", undelivered)
        out.add("duplicates", subscribers.duplicates)
        out.add("gaps", subscribers.gaps)
        out.add("out_of_order", subscribers.outOfOrder)
        out.add("protocol_errors", subscribers.protocolErrors + publishers.protocolErrors)
        out.add("errors", subscribers.errors + publishers.errors)
        out.add("resyncs", subscribers.resyncs)
        out.add("skipped_by_snapshot", subscribers.skippedBySnapshot)
        out.add("disconnects", subscribers.disconnects + publishers.disconnects)
        out.add("reconnects", subscribers.reconnects)
        out.add("reconnect_failures", subscribers.reconnectFailures)
        out.add("resumes_history", subscribers.resumesFromHistory)
        out.add("resumes_snapshot", subscribers.resumesWithSnapshot)
        out.add("merged_frames", subscribers.mergedFrames)
        out.add("drain_s", drainSeconds)
        out.add("server_source", serverSource)
        out.add("server_pid", serverPid.map { Int($0) })
        out.add("server_cpu_s", serverCPUSeconds)
        out.add("server_cpu_cores", serverCPUSeconds.map { $0 / serverWindowSeconds })
        out.add("server_cpu_us_per_delivery", windowDeliveries > 0 ? serverCPUSeconds.map { $0 * 1e6 / Double(windowDeliveries) } : nil)
        out.add("server_rss_bytes", serverEnd?.residentBytes)
        out.add("server_peak_rss_bytes", serverEnd?.peakResidentBytes)
        out.add("server_rss_before_bytes", serverBefore?.residentBytes)
        out.add("server_rss_connected_bytes", serverAfterConnect?.residentBytes)
        out.add("server_rss_per_connection_bytes", rssGrowthPerConnection)
        out.add("server_deliveries_per_s", serverMetricDelta("tether_patch_deliveries_total").map { $0 / serverWindowSeconds })
        out.add("server_frames_per_s", serverMetricDelta("tether_frames_sent_total").map { $0 / serverWindowSeconds })
        out.add("server_queue_overflows", serverMetricDelta("tether_send_queue_overflows_total").map { Int($0) })
        out.add("load_cpu_s", ownCPUSeconds)
        out.add("load_cpu_cores", ownCPUSeconds.map { $0 / ownWindowSeconds })
        out.add("load_cpu_us_per_delivery", windowDeliveries > 0 ? ownCPUSeconds.map { $0 * 1e6 / Double(windowDeliveries) } : nil)
        out.add("load_busiest_thread", busiestThreadShare)
        out.add("setup_errors", setupErrors.count)
        out.add("failures", failures.joined(separator: "; "))
        FileHandle.standardOutput.write(Data((out.text + "\n").utf8))
    }
}

/// A JSON object written member by member, in order.
struct JSONLine {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var first = true

    private mutating func key(_ name: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        JSONWriter.writeString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func add(_ name: String, _ value: String?) {
        key(name)
        if let value { JSONWriter.writeString(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    mutating func add(_ name: String, _ value: Int?) {
        key(name)
        bytes.append(contentsOf: (value.map(String.init) ?? "null").utf8)
    }

    mutating func add(_ name: String, _ value: Double?) {
        key(name)
        guard let value, value.isFinite else { bytes.append(contentsOf: "null".utf8); return }
        bytes.append(contentsOf: String(format: "%.10g", value).utf8)
    }

    mutating func add(_ name: String, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    var text: String { String(decoding: bytes + [UInt8(ascii: "}")], as: UTF8.self) }
}
