import Foundation
import Logging
import Synchronization
import TetherJSON

/// Sends what the outbox holds, on a task of its own (never a room's executor or a socket
/// thread): a slow or dead receiver never slows a room. Each round takes the due rows (one per
/// endpoint and room, oldest first), sends them at most `maxInFlight` at a time, and records
/// each outcome as `WebhookRetry` decides.
final class WebhookDeliverer: Sendable {
    private let recorder: WebhookRecorder
    private let http: any OutboundHTTP
    private let logger: Logger
    private let metrics: ServerMetrics?
    /// Set by `wake`: something was recorded, look now.
    private let woken = Atomic<Bool>(false)
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// Endpoints that answered 410 Gone: nothing is sent to them until `retry`.
    private let gone = Mutex<Set<String>>([])
    /// The endpoints' figures as of the last look (at most a second old while it runs), for the
    /// dashboard and metrics: reading them from the store once per watcher would cost a query each.
    private let latest = Mutex<(statuses: [String: WebhookEndpointStatus], at: ContinuousClock.Instant?)>(([:], nil))
    static let maxInFlight = 16

    init(recorder: WebhookRecorder, http: any OutboundHTTP, logger: Logger, metrics: ServerMetrics?) {
        self.recorder = recorder
        self.http = http
        self.logger = logger
        self.metrics = metrics
    }

    func wake() { woken.store(true, ordering: .relaxed) }

    func start() {
        task.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await run() }
        }
    }

    func stop() async {
        let running = task.withLock { task in defer { task = nil }; return task }
        running?.cancel()
        await running?.value
    }

    /// `tether webhooks retry NAME`: its dead events pending again, and a 410 forgotten.
    func revive(_ endpoint: String) -> Int {
        gone.withLock { _ = $0.remove(endpoint) }
        let count = recorder.outbox.revive(endpoint: endpoint, now: Self.now)
        wake()
        return count
    }

    var goneEndpoints: Set<String> { gone.withLock { $0 } }

    var hasEndpoints: Bool { !recorder.current.isEmpty }

    /// Each endpoint as the dashboard's webhooks panel shows it (`WebhookAdministration.describe`);
    /// on a cluster node that does not deliver, `deliveredBy` names the one that does.
    var overview: [JSON] {
        let endpoints = WebhookAdministration.describe(recorder.current, statuses: latest.withLock { $0.statuses }, gone: goneEndpoints)
        guard !recorder.outbox.isDelivering else { return endpoints }
        let node = JSON.string(recorder.outbox.deliveringNode ?? "another node")
        return endpoints.map { endpoint in
            var fields = endpoint.objectValue ?? [:]
            fields["deliveredBy"] = node
            return .object(fields)
        }
    }

    /// Reads the figures again if they are a second old, and updates the metrics. Not per round:
    /// under a steady stream of events a round is one delivery, and the query waits for the
    /// store's writer, which the rooms' commits use too.
    private func refreshStatuses() {
        let now = ContinuousClock.now
        if let at = latest.withLock({ $0.at }), now - at < .seconds(1) { return }
        let statuses = recorder.outbox.status()
        latest.withLock { $0 = (statuses, now) }
        metrics?.webhookQueues(statuses)
    }

    private func run() async {
        while !Task.isCancelled {
            woken.store(false, ordering: .relaxed)
            let endpoints = Dictionary(uniqueKeysWithValues: recorder.current.map { ($0.name, $0) })
            let skipped = gone.withLock { $0 }
            let rows = recorder.outbox.due(now: Self.now, limit: 256).filter { endpoints[$0.delivery.endpoint] != nil && !skipped.contains($0.delivery.endpoint) }
            if rows.isEmpty {
                refreshStatuses()
                // Until woken (looked at every 50 ms), or a retry falls due.
                for _ in 0..<10 where !woken.load(ordering: .relaxed) && !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(50))
                }
                continue
            }
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for row in rows {
                    if running == Self.maxInFlight {
                        await group.next()
                        running -= 1
                    }
                    group.addTask { [self] in await attempt(row, to: endpoints[row.delivery.endpoint]!) }
                    running += 1
                }
            }
            refreshStatuses()
        }
    }

    private func attempt(_ row: WebhookOutboxRow, to endpoint: WebhookEndpoint) async {
        let outcome = await send(row.delivery.event, to: endpoint)
        let now = Self.now
        let attempts = row.attempts + 1
        let decision = WebhookRetry.decide(outcome, attempts: attempts, age: Double(now - row.created),
                                           retryFor: Double(endpoint.retryFor.components.seconds), random: Double.random(in: 0..<1))
        let outbox = recorder.outbox
        switch decision {
        case .delivered:
            outbox.delivered(row.seq)
            metrics?.webhookAttempt(endpoint: endpoint.name, result: "ok")
        case .retry(let delay, let reason):
            outbox.retry(row.seq, attempts: attempts, at: now + Int(delay.rounded(.up)), error: reason, now: now)
            metrics?.webhookAttempt(endpoint: endpoint.name, result: "retry")
        case .dead(let reason):
            outbox.dead(row.seq, attempts: attempts, error: reason, now: now)
            metrics?.webhookAttempt(endpoint: endpoint.name, result: "dead")
            logger.warning("webhook \(endpoint.name): event \(row.delivery.event.id) dead-lettered: \(reason)")
        case .disable(let reason):
            gone.withLock { _ = $0.insert(endpoint.name) }
            outbox.retry(row.seq, attempts: attempts, at: now, error: reason, now: now)
            metrics?.webhookAttempt(endpoint: endpoint.name, result: "gone")
            logger.warning("webhook \(endpoint.name): \(reason); nothing more is sent to it until `tether webhooks retry \(endpoint.name)`")
        }
    }

    /// One signed POST of `event`.
    func send(_ event: WebhookEvent, to endpoint: WebhookEndpoint) async -> WebhookRetry.Outcome {
        var headers = WebhookSignature.headers(id: event.id, timestamp: Self.now, body: event.body, secrets: endpoint.secrets)
        headers.append(("Content-Type", "application/json"))
        headers.append(("User-Agent", "tetherd/\(TetherServer.version)"))
        let request = OutboundRequest(method: "POST", url: endpoint.url, headers: headers, body: event.body, timeout: endpoint.timeout)
        do {
            let response = try await http.send(request)
            return .status(response.status, retryAfter: response.headers["retry-after"].flatMap { Int($0) })
        } catch {
            return .failed(error.description)
        }
    }

    static var now: Int { Int(Date().timeIntervalSince1970) }
}
