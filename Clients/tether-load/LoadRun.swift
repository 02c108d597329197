import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One run: connect, publish, measure, drain, report.
final class LoadRun {
    let configuration: LoadConfiguration
    let label: String?
    let logger = Logger(label: "tether-load")
    private let progress: ProgressLine

    init(configuration: LoadConfiguration, showProgress: Bool, label: String?) {
        self.configuration = configuration
        self.progress = ProgressLine(enabled: showProgress)
        self.label = label
    }

    func run() -> RunOutcome {
        let c = configuration
        var outcome = RunOutcome(configuration: c, label: label)
        outcome.fileLimit = raiseFileLimit(wanted: c.clients + c.publishers + 512)
        if outcome.fileLimit < c.clients + c.publishers + 64 {
            outcome.setupErrors.append("RLIMIT_NOFILE is \(outcome.fileLimit): too low for \(c.clients + c.publishers) connections")
            return outcome
        }
        let probe = ServerProbes(urls: c.urls, pids: c.serverPids)
        outcome.serverSource = probe.source
        outcome.serverPids = probe.pids
        if let error = probe.unreachable() {
            outcome.setupErrors.append(error)
            return outcome
        }
        let before = probe.sample(withMetrics: true)
        outcome.serverBefore = before

        let shards = ClientShards(configuration: c, logger: logger)
        defer { shards.shutdown() }
        do {
            try shards.start()
        } catch {
            outcome.setupErrors.append("cannot start the client transport: \(error)")
            return outcome
        }

        // 1. Connect the subscribers at --ramp per second.
        let connectStart = monotonicNanos()
        connectSubscribers(shards)
        outcome.connectSeconds = seconds(since: connectStart)
        let connected = shards.subscriberCounters
        outcome.connected = connected.joined
        if connected.connectFailures > 0 || connected.joined < c.clients {
            outcome.setupErrors.append("\(c.clients - connected.joined) of \(c.clients) subscribers did not connect")
        }
        if c.rate == 0 { sleep(seconds: 1.0) }  // idle: let the server settle before reading its memory
        outcome.serverAfterConnect = probe.sample(withMetrics: false)

        // 2. Connect the publishers.
        if shards.publishers != nil {
            shards.connectPublishers()
            let deadline = monotonicNanos() + Int(c.connectTimeout * 1e9)
            while monotonicNanos() < deadline, !Interruption.requested {
                let ready = shards.publisherCounters
                if let ready, ready.ready + ready.connectFailures >= c.publishers { break }
                sleep(seconds: 0.02)
            }
            let ready = shards.publisherCounters?.ready ?? 0
            if ready < c.publishers {
                outcome.setupErrors.append("\(c.publishers - ready) of \(c.publishers) publishers did not connect")
            }
        }
        // A setup failure ends the run here (exit status 2): figures from a partial setup mislead.
        if !outcome.setupErrors.isEmpty { return finish(outcome, shards) }
        if c.expectRestart {
            // For scripts: from here on the server may be restarted under the subscribers.
            FileHandle.standardError.write(Data("tether-load: \(outcome.connected) subscribers joined: ready for a restart\n".utf8))
        }

        // 3. Publish (and churn) for warm-up + duration; measure the window after the warm-up.
        let runStart = monotonicNanos()
        let windowStart = runStart + Int(c.warmup * 1e9)
        let runEnd = windowStart + Int(c.duration * 1e9)
        let pacer = Pacer()
        if let publisherShard = shards.publishers { pacer.start(shard: publisherShard, rate: c.rate, from: runStart, until: runEnd) }
        var churned = 0
        var windowOpen = false
        var lastProgress = monotonicNanos()
        var previous = ProgressSnapshot(shards, probe)
        while !Interruption.requested {
            let now = monotonicNanos()
            if now >= runEnd { break }
            if !windowOpen && now >= windowStart {
                openWindow(shards, probe, outcome: &outcome)
                windowOpen = true
            }
            if c.churn > 0 {
                let due = Int(Double(now - runStart) / 1e9 * c.churn)
                if due > churned { shards.churn(due - churned, startingAt: churned); churned = due }
            }
            if now - lastProgress >= 1_000_000_000 {
                lastProgress = now
                previous = progress.showTraffic(phase: windowOpen ? "measure" : "warm-up", elapsed: seconds(since: runStart),
                                                shards, probe, configuration: c, previous: previous)
            }
            sleep(seconds: 0.01)
        }
        pacer.stop()
        if shards.publishers != nil { pacer.wait() }
        if !windowOpen { openWindow(shards, probe, outcome: &outcome) }
        closeWindow(shards, probe, outcome: &outcome)
        outcome.churnRequested = churned

        // 4. Drain: every action acked, every subscriber caught up with the last sequence numbers.
        let drainStart = monotonicNanos()
        if let publisherShard = shards.publishers {
            let deadline = drainStart + Int(c.drainTimeout * 1e9)
            var counters = shards.publisherCounters
            while let current = counters, current.outstanding > 0, monotonicNanos() < deadline, !Interruption.requested {
                sleep(seconds: 0.02)
                counters = shards.publisherCounters
            }
            if let targets = onLoop(publisherShard.client, { publisherShard.report().sent }) {
                shards.setTargets(targets)
                var behind = shards.behind
                var lastShown = monotonicNanos()
                var lastProgress = (at: monotonicNanos(), behind: behind)
                while behind > 0, monotonicNanos() < deadline, !Interruption.requested {
                    sleep(seconds: 0.02)
                    behind = shards.behind
                    // Nothing arrived for 3 s: what is missing is lost (an action that failed, say).
                    if behind != lastProgress.behind { lastProgress = (monotonicNanos(), behind) }
                    if monotonicNanos() - lastProgress.at > 3_000_000_000 { break }
                    if monotonicNanos() - lastShown >= 1_000_000_000 {
                        lastShown = monotonicNanos()
                        progress.show("drain: \(behind) deliveries still missing")
                    }
                }
                outcome.undelivered = behind
            }
        }
        if c.expectRestart { awaitResumes(shards, until: drainStart + Int(c.drainTimeout * 1e9)) }
        outcome.drainSeconds = seconds(since: drainStart)
        outcome.interrupted = Interruption.requested
        return finish(outcome, shards)
    }

    /// Collects every shard's final figures into the outcome.
    private func finish(_ outcome: RunOutcome, _ shards: ClientShards) -> RunOutcome {
        var outcome = outcome
        for shard in shards.subscribers {
            shard.client.execute { shard.stop() }
            if let report = onLoop(shard.client, { shard.report() }) {
                outcome.subscribers.add(report.counters)
                outcome.connectTimes.add(report.connectTimes)
                outcome.samples += report.samples
            }
        }
        if let publisherShard = shards.publishers, let report = onLoop(publisherShard.client, { publisherShard.report() }) {
            outcome.publishers = report.counters
            outcome.samples += report.samples
        }
        progress.clear()
        return outcome
    }

    // MARK: Phases

    /// After a restart: waits until every subscriber is live again (resumed) or the deadline.
    private func awaitResumes(_ shards: ClientShards, until deadline: Int) {
        var counters = shards.subscriberCounters
        while counters.live < configuration.clients, monotonicNanos() < deadline, !Interruption.requested {
            progress.show("resume: \(counters.live)/\(configuration.clients) subscribers live")
            sleep(seconds: 0.05)
            counters = shards.subscriberCounters
        }
    }

    /// Issues first connections at --ramp per second, at most 1,000 in flight, until every
    /// subscriber joined or failed (or nothing changed for the connect timeout + 5 s).
    private func connectSubscribers(_ shards: ClientShards) {
        let c = configuration
        let start = monotonicNanos()
        var issued = 0
        var lastCheck = 0
        var lastProgress = start
        var lastChange = start
        var lastDone = -1
        let maxInFlight = c.maxInFlight > 0 ? c.maxInFlight : c.clients
        var current = SubscriberCounters()
        while !Interruption.requested {
            let now = monotonicNanos()
            if now - lastCheck >= 50_000_000 || issued == c.clients {
                lastCheck = now
                current = shards.subscriberCounters
                let done = current.joined + current.connectFailures
                if done >= c.clients { break }
                if done != lastDone { lastDone = done; lastChange = now }
                if now - lastChange > Int((c.connectTimeout + 5) * 1e9) { break }
            }
            let inFlight = current.connectsStarted - current.joined - current.connectFailures + (issued - current.connectsStarted)
            let allowed = min(c.clients, Int(Double(now - start) / 1e9 * c.ramp) + 1, issued + max(0, maxInFlight - inFlight))
            if allowed > issued {
                shards.connectSubscribers(issued..<allowed)
                issued = allowed
            }
            if now - lastProgress >= 1_000_000_000 {
                lastProgress = now
                progress.show(String(format: "connect %6.1fs  joined %d/%d  failed %d  in flight %d",
                                     Double(now - start) / 1e9, current.joined, c.clients, current.connectFailures, max(0, inFlight)))
            }
            sleep(seconds: issued < c.clients ? 0.005 : 0.02)
        }
    }

    /// Opens the measurement window: counters first (quick round trips to the loop threads,
    /// each stamped with its own time), then the slower server and process readings.
    private func openWindow(_ shards: ClientShards, _ probe: ServerProbes, outcome: inout RunOutcome) {
        if let publisherShard = shards.publishers, let report = onLoop(publisherShard.client, { publisherShard.report(measure: true) }) {
            outcome.publishersAtStart = report.counters
            outcome.publisherWindow.lowerBound = report.at
        }
        var total = SubscriberCounters()
        var times: [Int] = []
        for shard in shards.subscribers {
            if let report = onLoop(shard.client, { shard.report(measure: true) }) {
                total.add(report.counters)
                times.append(report.at)
            }
        }
        outcome.subscribersAtStart = total
        outcome.subscriberWindow.lowerBound = times.isEmpty ? monotonicNanos() : times.reduce(0, +) / times.count
        outcome.ownStart = OwnUsage.now()
        outcome.serverStart = probe.sample(withMetrics: true)
    }

    private func closeWindow(_ shards: ClientShards, _ probe: ServerProbes, outcome: inout RunOutcome) {
        if let publisherShard = shards.publishers, let report = onLoop(publisherShard.client, { publisherShard.report(measure: false) }) {
            outcome.publishersAtEnd = report.counters
            outcome.publisherWindow.upperBound = report.at
            outcome.ackTimes.add(report.ackTimes)
        }
        var total = SubscriberCounters()
        var times: [Int] = []
        for shard in shards.subscribers {
            if let report = onLoop(shard.client, { shard.report(measure: false) }) {
                total.add(report.counters)
                times.append(report.at)
                outcome.latency.add(report.window)
            }
        }
        outcome.subscribersAtEnd = total
        outcome.subscriberWindow.upperBound = times.isEmpty ? monotonicNanos() : times.reduce(0, +) / times.count
        outcome.ownEnd = OwnUsage.now()
        outcome.serverEnd = probe.sample(withMetrics: true)
    }
}
