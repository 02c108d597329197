import Histogram

/// Everything a run measured, and the figures derived from it. Shown as a table for people
/// (`SummaryTable.swift`) and one JSON line for scripts (`ResultLine.swift`).
struct RunOutcome {
    let configuration: LoadConfiguration
    let label: String?
    var fileLimit = 0
    /// Server unreachable, connections that did not open...: the run stops, prints one line
    /// (`setupFailure`) and exits with status 2.
    var setupErrors: [String] = []
    var serverSource = "none"
    /// The server processes read through /proc (none: figures from /metrics, or none at all).
    var serverPids: [Int32] = []
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
    /// --expect-restart: from the first reconnect that opened to the last subscriber resumed.
    var resumedAllAfterSeconds: Double? {
        guard subscribers.firstReopenAt > 0, subscribers.lastResumeAt >= subscribers.firstReopenAt else { return nil }
        return Double(subscribers.lastResumeAt - subscribers.firstReopenAt) / 1e9
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
        if configuration.expectRestart {
            check(configuration.clients - subscribers.live, "subscribers not live again at the end")
        }
        check(publishers.ackMismatches, "mismatched acks")
        check(unacked, "actions never acked")
        check(publishers.errors, "actions answered with an error")
        check(publishers.protocolErrors, "publisher protocol errors")
        check(publishers.disconnects, "publisher disconnects")
        if interrupted { list.append("interrupted") }
        return list
    }

    /// The one line a failed set-up prints: what failed, the first failure seen, and what to try
    /// for a certificate that is not trusted.
    var setupFailure: String? {
        guard !setupErrors.isEmpty else { return nil }
        var line = setupErrors.joined(separator: "; ")
        if let first = samples.first { line += " (\(first))" }
        if configuration.trust == .system, configuration.urls.contains(where: { $0.lowercased().hasPrefix("wss:") }),
           line.contains("TLS") {
            line += "; for a self-signed certificate pass --ca FILE (the server's certificate, e.g. from Scripts/make-cert.sh) or --insecure"
        }
        return line
    }

    var exitStatus: Int32 {
        if !setupErrors.isEmpty { return ExitStatus.setupFailed }
        return failures.isEmpty ? ExitStatus.ok : ExitStatus.violations
    }
}
