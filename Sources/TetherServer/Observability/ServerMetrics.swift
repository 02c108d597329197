import Foundation
import Prometheus
import Synchronization
import TetherProtocol

/// The daemon's Prometheus metrics. Counters are atomic, so rooms and the socket thread update
/// them without locks; hot paths add once per batch, not once per message.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()

    let connections: Gauge
    let connectionsOpened: Counter
    let rooms: Gauge
    let messagesReceived: Counter
    let bytesReceived: Counter
    let framesSent: Counter
    let bytesSent: ReadableCounter
    let patchesProduced: Counter
    let patchDeliveries: ReadableCounter
    let mergedFrames: Counter
    let sendQueueOverflows: Counter
    let stuckClientsClosed: Counter
    let fanOutLatency: DurationHistogram
    let forwardedActions: Counter
    let appendLatency: DurationHistogram
    let ownershipChanges: Counter
    let catchUps: Counter
    /// The identity provider's key set: fetches by result, keys held.
    /// Cluster webhook events dropped while too many waited to be copied (PendingWebhooks.swift).
    let webhookEventsDropped: Counter
    let jwksFetched: Counter
    let jwksFetchFailed: Counter
    let jwksKeys: Gauge
    private let actionsByOutcome: [String: Counter]
    /// Every action, whatever its outcome (the system room's actions per second).
    private let actionsTotal = Atomic<Int64>(0)
    private let errorsByCode: [ErrorCode: Counter]
    private let resumesFromHistory: Counter
    private let resumesWithSnapshot: Counter
    private let cpuSeconds: Gauge
    private let residentBytes: Gauge
    private let peakResidentBytes: Gauge

    init() {
        func metric(_ name: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        }
        connections = registry.makeGauge(descriptor: metric("tether_connections", "Open WebSocket connections"))
        connectionsOpened = registry.makeCounter(descriptor: metric("tether_connections_opened_total", "WebSocket connections accepted"))
        rooms = registry.makeGauge(descriptor: metric("tether_rooms", "Live room instances (shared and per-session)"))
        messagesReceived = registry.makeCounter(descriptor: metric("tether_messages_received_total", "Messages received from clients"))
        bytesReceived = registry.makeCounter(descriptor: metric("tether_bytes_received_total", "Message bytes received from clients"))
        framesSent = registry.makeCounter(descriptor: metric("tether_frames_sent_total", "Frames written to clients (a merged patch is one frame)"))
        bytesSent = ReadableCounter(registry.makeCounter(descriptor: metric("tether_bytes_sent_total", "Frame bytes written to clients")))
        patchesProduced = registry.makeCounter(descriptor: metric("tether_patches_total", "Version steps produced by rooms (one per changing turn)"))
        patchDeliveries = ReadableCounter(registry.makeCounter(descriptor: metric("tether_patch_deliveries_total", "Version steps written to subscribers, merged or not")))
        mergedFrames = registry.makeCounter(descriptor: metric("tether_merged_patch_frames_total", "Patch frames that carried several versions"))
        sendQueueOverflows = registry.makeCounter(descriptor: metric("tether_send_queue_overflows_total", "Times a slow client's queue overflowed and was replaced by a snapshot"))
        stuckClientsClosed = registry.makeCounter(descriptor: metric("tether_stuck_clients_closed_total", "Clients closed with 1008 after their queue made no progress for too long"))
        fanOutLatency = registry.makeDurationHistogram(
            descriptor: metric("tether_fanout_latency_seconds", "From a room producing a patch to the patch being queued for every subscriber"),
            buckets: [.microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
                      .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                      .milliseconds(100), .milliseconds(250), .seconds(1)])
        forwardedActions = registry.makeCounter(descriptor: metric("tether_cluster_forwarded_actions_total", "Actions forwarded to the node owning their room"))
        appendLatency = registry.makeDurationHistogram(
            descriptor: metric("tether_cluster_append_latency_seconds", "From sending a version step to the cluster log to its acknowledgement"),
            buckets: [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
                      .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5)])
        ownershipChanges = registry.makeCounter(descriptor: metric("tether_cluster_ownership_changes_total", "Rooms this node took ownership of"))
        catchUps = registry.makeCounter(descriptor: metric("tether_cluster_catch_ups_total", "Reads of a room's log to catch up (load, or a gap)"))
        var outcomes: [String: Counter] = [:]
        for outcome in ["ok"] + ErrorCode.allCases.map(\.rawValue) {
            outcomes[outcome] = registry.makeCounter(descriptor: metric("tether_actions_total", "Actions by outcome"), labels: [("outcome", outcome)])
        }
        actionsByOutcome = outcomes
        var errors: [ErrorCode: Counter] = [:]
        for code in ErrorCode.allCases {
            errors[code] = registry.makeCounter(descriptor: metric("tether_errors_sent_total", "Error messages sent, by code"), labels: [("code", code.rawValue)])
        }
        errorsByCode = errors
        webhookEventsDropped = registry.makeCounter(descriptor: metric("tether_webhook_events_dropped_total", "Cluster webhook events dropped while more than 100,000 of a room waited to be copied into the webhook stream"))
        jwksFetched = registry.makeCounter(descriptor: metric("tether_jwks_fetches_total", "Fetches of the identity provider's key set, by result"), labels: [("result", "ok")])
        jwksFetchFailed = registry.makeCounter(descriptor: metric("tether_jwks_fetches_total", "Fetches of the identity provider's key set, by result"), labels: [("result", "failed")])
        jwksKeys = registry.makeGauge(descriptor: metric("tether_jwks_keys", "Keys of the identity provider held (from its last good fetch)"))
        resumesFromHistory = registry.makeCounter(descriptor: metric("tether_resumes_total", "Joins with since, by how they were served"), labels: [("result", "history")])
        resumesWithSnapshot = registry.makeCounter(descriptor: metric("tether_resumes_total", "Joins with since, by how they were served"), labels: [("result", "snapshot")])
        cpuSeconds = registry.makeGauge(descriptor: metric("process_cpu_seconds_total", "User and system CPU time of the daemon"))
        residentBytes = registry.makeGauge(descriptor: metric("process_resident_memory_bytes", "Resident memory of the daemon"))
        peakResidentBytes = registry.makeGauge(descriptor: metric("process_peak_resident_memory_bytes", "Peak resident memory of the daemon"))
    }

    /// A webhook delivery attempt's result (`ok`, `retry`, `dead`, `gone`), per endpoint.
    func webhookAttempt(endpoint: String, result: String) {
        let name = MetricNameDescriptor(metricName: "tether_webhook_deliveries_total", unitName: "", helpText: "Webhook delivery attempts, by endpoint and result")
        registry.makeCounter(descriptor: name, labels: [("endpoint", endpoint), ("result", result)]).increment()
    }

    /// Deliveries waiting per endpoint, and dead-lettered ones.
    func webhookQueues(_ statuses: [String: WebhookEndpointStatus]) {
        for (endpoint, status) in statuses {
            let pending = MetricNameDescriptor(metricName: "tether_webhook_pending", unitName: "", helpText: "Webhook deliveries waiting, by endpoint")
            let dead = MetricNameDescriptor(metricName: "tether_webhook_dead", unitName: "", helpText: "Webhook deliveries dead-lettered, by endpoint")
            registry.makeGauge(descriptor: pending, labels: [("endpoint", endpoint)]).set(Double(status.pending))
            registry.makeGauge(descriptor: dead, labels: [("endpoint", endpoint)]).set(Double(status.dead))
        }
    }

    func action(outcome: String) {
        actionsByOutcome[outcome]?.increment()
        actionsTotal.wrappingAdd(1, ordering: .relaxed)
    }

    /// Actions so far, whatever their outcome.
    var actions: Int64 { actionsTotal.load(ordering: .relaxed) }
    func errorSent(_ code: ErrorCode) { errorsByCode[code]?.increment() }
    func patchProduced() { patchesProduced.increment() }
    func resumes(fromHistory: Bool) { (fromHistory ? resumesFromHistory : resumesWithSnapshot).increment() }

    /// The exposition text, with process figures read at scrape time.
    func render() -> [UInt8] {
        let usage = ProcessUsage.current()
        cpuSeconds.set(usage.cpuSeconds)
        residentBytes.set(Double(usage.residentBytes))
        peakResidentBytes.set(Double(usage.peakResidentBytes))
        return registry.emitToBuffer()
    }
}

/// A Prometheus counter whose total can be read back (swift-prometheus' can't): the system
/// room differences these totals into rates once a second.
final class ReadableCounter: Sendable {
    private let counter: Counter
    private let total = Atomic<Int64>(0)

    init(_ counter: Counter) {
        self.counter = counter
    }

    func increment(by amount: Int64 = 1) {
        counter.increment(by: amount)
        total.wrappingAdd(amount, ordering: .relaxed)
    }

    var value: Int64 { total.load(ordering: .relaxed) }
}

/// CPU time and memory of this process, from getrusage and /proc/self/status.
struct ProcessUsage {
    var cpuSeconds: Double
    var residentBytes: Int
    var peakResidentBytes: Int

    static func current() -> ProcessUsage {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1_000_000 }
        var result = ProcessUsage(cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime), residentBytes: 0, peakResidentBytes: usage.ru_maxrss * 1024)
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
                let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                result.residentBytes = kilobytes * 1024
            }
        }
        return result
    }
}
