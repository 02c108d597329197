import ArgumentParser
import Dispatch
import Foundation
import Histogram
import Logging
import Synchronization
import TetherTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tether-load`: many Tether clients in one process, checking every stream and measuring
/// latency, throughput and the server's cost. See `tether-load --help` and the README.
@main
struct TetherLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tether-load",
        abstract: "Load generator for tetherd: many subscribers, paced publishers, every stream checked.",
        discussion: """
            Subscribers (--clients) join bench rooms (`bench` for one room, else bench:1 ... bench:N) and \
            check their streams: gapless versions, every published sequence number exactly once. \
            Publishers (--publishers, extra connections that join nothing) send `set` actions at \
            --rate per second in total, each value carrying its monotonic send time; a subscriber's \
            latency is its receive time minus that. With --rate 0 the connections stay idle (memory \
            per connection).

            Exit status: 0 when nothing was lost, duplicated or out of order and every action was \
            acked; 1 otherwise; 2 for usage errors and connection setup failures.
            """)

    @Option(help: "Server URL.")
    var url = "ws://127.0.0.1:8080/"

    @Option(help: "Subscriber connections.")
    var clients = 100

    @Option(help: "Rooms the subscribers are spread over: `bench` when 1, else bench:1 ... bench:N.")
    var rooms = 1

    @Option(help: "Publisher connections (in addition to --clients). tetherd limits each connection to 1,000 actions/s by default.")
    var publishers = 1

    @Option(help: "Actions per second, in total over all publishers and rooms (0: idle connections).")
    var rate: Double = 100

    @Option(help: "Seconds measured, after the warm-up.")
    var duration: Double = 10

    @Option(help: "Seconds of traffic before measuring starts (checked, not counted in the figures).")
    var warmup: Double = 1

    @Option(help: "New connections per second while connecting.")
    var ramp: Double = 2000

    @Option(help: "Padding bytes in every action's value.")
    var payloadBytes = 0

    @Option(help: "Subscriber disconnects per second while actions flow; each reconnects and resumes with `since`.")
    var churn: Double = 0

    @Option(help: "Access token sent in every join.")
    var token: String?

    @Option(help: "Subscriber service threads (one lws context each).")
    var threads = 1

    @Option(help: "The server's pid, to read its CPU and memory from /proc (found automatically for a local URL).")
    var serverPid: Int32?

    @Option(help: "Seconds to wait, after the last action, for acks and for every subscriber to catch up.")
    var drainTimeout: Double = 10

    @Option(help: "Seconds allowed for one connection to open.")
    var connectTimeout: Double = 10

    @Option(help: ArgumentHelp(
        "Microseconds a subscriber thread pauses between poll rounds while frames flow (0: never; default: 0.1 µs per connection of the thread, 50...1000).",
        discussion: "lws polls every connection on each round: the pause lets one poll() find many sockets ready. It adds at most this much to a latency."))
    var batchMicros: Int?

    @Flag(help: .hidden)
    var verifyScanner = false

    @Option(help: "A name for this run, copied into the --json line.")
    var label: String?

    @Flag(help: "Print one JSON line with the results on stdout (the table goes to stderr).")
    var json = false

    @Flag(help: "No live progress.")
    var quiet = false

    static func main() {
        do {
            let command = try parseAsRoot()
            guard let load = command as? TetherLoad else {
                // --help, --version and the like.
                var other = command
                try other.run()
                Glibc.exit(0)
            }
            Glibc.exit(load.execute())
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Glibc.exit(0)
            }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Glibc.exit(Outcome.usage)
        }
    }

    func validate() throws {
        guard clients >= 0 else { throw ValidationError("--clients must be 0 or more") }
        guard rooms >= 1 else { throw ValidationError("--rooms must be at least 1") }
        guard rate >= 0, rate.isFinite else { throw ValidationError("--rate must be 0 or more") }
        guard rate == 0 || publishers >= 1 else { throw ValidationError("--publishers must be at least 1 when --rate is above 0") }
        guard publishers >= 0 else { throw ValidationError("--publishers must be 0 or more") }
        guard duration > 0, warmup >= 0 else { throw ValidationError("--duration must be above 0 and --warmup 0 or more") }
        guard ramp > 0 else { throw ValidationError("--ramp must be above 0") }
        guard payloadBytes >= 0, payloadBytes <= 512 << 10 else { throw ValidationError("--payload-bytes must be between 0 and 524288") }
        guard churn >= 0 else { throw ValidationError("--churn must be 0 or more") }
        guard threads >= 1, threads <= 16 else { throw ValidationError("--threads must be between 1 and 16") }
        guard (batchMicros ?? 0) >= 0, (batchMicros ?? 0) <= 100_000 else { throw ValidationError("--batch-micros must be between 0 and 100000") }
        guard drainTimeout >= 0, connectTimeout > 0 else { throw ValidationError("--drain-timeout and --connect-timeout must be positive") }
        guard url.hasPrefix("ws://") || url.hasPrefix("wss://") else { throw ValidationError("--url must start with ws:// or wss://") }
    }

    /// A poll() costs about 30 ns per connection here: pausing about three polls' worth keeps
    /// polling to a fraction of the thread's time while adding little to the latencies measured.
    static func automaticBatchMicros(connectionsPerThread: Int) -> Int {
        min(1000, max(50, connectionsPerThread / 10))
    }

    func run() throws {
        Glibc.exit(execute())
    }

    /// The whole run; returns the exit status.
    func execute() -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        signal(SIGINT, onInterrupt)
        signal(SIGTERM, onInterrupt)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .error
            return handler
        }
        let configuration = LoadConfiguration(
            url: url, clients: clients, rooms: rooms, publishers: rate > 0 ? publishers : 0, rate: rate,
            duration: duration, warmup: warmup, ramp: ramp, payloadBytes: payloadBytes, churn: churn,
            token: token, threads: max(1, min(threads, max(1, clients))), drainTimeout: drainTimeout,
            connectTimeout: connectTimeout, batchNanos: (batchMicros ?? Self.automaticBatchMicros(connectionsPerThread: clients / max(1, threads))) * 1000, verifyScanner: verifyScanner,
            runTag: Int.random(in: 1..<(1 << 30)))
        let runner = LoadRun(configuration: configuration, showProgress: !quiet, label: label)
        let outcome = runner.run()
        outcome.printSummary(toStandardError: json)
        if json { outcome.printJSON() }
        return outcome.exitStatus
    }
}

enum Outcome {
    static let ok: Int32 = 0
    static let violations: Int32 = 1
    static let usage: Int32 = 2
}

private let interrupted = Atomic<Bool>(false)

/// First Ctrl-C: stop publishing and report what was measured. Second: leave at once.
private let onInterrupt: @convention(c) (Int32) -> Void = { _ in
    if interrupted.exchange(true, ordering: .relaxed) { _exit(130) }
}

/// Written on a loop thread before the semaphore is signalled, read after the wait.
private final class Handoff<T>: @unchecked Sendable {
    var value: T?
}

/// Runs `body` on `client`'s loop thread and waits for its result (nil if the loop is gone or
/// does not answer within 15 s).
func onLoop<T>(_ client: WebSocketClient, _ body: @escaping @Sendable () -> T) -> T? {
    let handoff = Handoff<T>()
    let done = DispatchSemaphore(value: 0)
    guard client.execute({ handoff.value = body(); done.signal() }) else { return nil }
    guard done.wait(timeout: .now() + 15) == .success else { return nil }
    return handoff.value
}

/// Sends actions on time: sleeps (absolute, monotonic) until the next action is due and posts
/// every due action to the publisher thread. At high rates one wake-up carries several actions;
/// a late wake-up catches up, so the offered rate holds.
final class Pacer: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    func start(shard: PublisherShard, rate: Double, from start: Int, until end: Int) {
        let interval = 1e9 / rate
        let thread = Thread { [self] in
            var issued = 0
            while !stopFlag.load(ordering: .relaxed) {
                let now = monotonicNanos()
                if now >= end { break }
                let due = Int(Double(now - start) / interval) + 1
                if due > issued {
                    let first = issued, count = due - issued
                    shard.client.execute { shard.send(first: first, count: count) }
                    issued = due
                }
                let next = min(end, start + Int((Double(issued) * interval).rounded(.up)))
                var wake = timespec(tv_sec: next / 1_000_000_000, tv_nsec: next % 1_000_000_000)
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil)
            }
            finished.signal()
        }
        thread.name = "tether-load-pacer"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    func stop() {
        stopFlag.store(true, ordering: .relaxed)
    }

    func wait() {
        finished.wait()
    }
}

/// One run: connect, publish, measure, drain, report.
final class LoadRun {
    let configuration: LoadConfiguration
    let showProgress: Bool
    let label: String?
    let logger = Logger(label: "tether-load")
    let isTerminal = isatty(STDERR_FILENO) == 1
    private var progressLines = 0

    init(configuration: LoadConfiguration, showProgress: Bool, label: String?) {
        self.configuration = configuration
        self.showProgress = showProgress
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
        let probe = ServerProbe(url: c.url, pid: nil)
        outcome.serverSource = probe.source
        outcome.serverPid = probe.pid
        if probe.httpAllowed, (try? probe.httpGET("/healthz")) == nil {
            outcome.setupErrors.append("no answer from \(c.url) (GET /healthz failed)")
            return outcome
        }
        let before = probe.sample(withMetrics: true)
        outcome.serverBefore = before

        // Subscriber shards: subscriber g joins room g % rooms on shard g % threads.
        let shards = (0..<c.threads).map { _ in SubscriberShard(configuration: c, logger: logger) }
        for g in 0..<c.clients { shards[g % c.threads].add(room: c.room(ofSubscriber: g)) }
        let publisherShard = c.rate > 0 ? PublisherShard(configuration: c, logger: logger) : nil
        defer {
            for shard in shards { shard.client.execute { shard.stop() }; shard.client.shutdown(deadline: .seconds(3)) }
            if let publisherShard {
                publisherShard.client.execute { publisherShard.stop() }
                publisherShard.client.shutdown(deadline: .seconds(2))
            }
        }
        do {
            for shard in shards { try shard.client.start() }
            try publisherShard?.client.start()
        } catch {
            outcome.setupErrors.append("cannot start the client transport: \(error)")
            return outcome
        }

        // 1. Connect the subscribers at --ramp per second.
        let connectStart = monotonicNanos()
        connectSubscribers(shards, outcome: &outcome)
        outcome.connectSeconds = seconds(since: connectStart)
        let connected = counters(shards)
        outcome.connected = connected.joined
        if connected.connectFailures > 0 || connected.joined < c.clients {
            outcome.setupErrors.append("\(c.clients - connected.joined) of \(c.clients) subscribers did not connect")
        }
        if c.rate == 0 { pause(1.0) }  // idle: let the server settle before reading its memory
        outcome.serverAfterConnect = probe.sample(withMetrics: false)

        // 2. Connect the publishers.
        if let publisherShard {
            publisherShard.client.execute { publisherShard.connectAll() }
            let deadline = monotonicNanos() + Int(c.connectTimeout * 1e9)
            while monotonicNanos() < deadline, !isInterrupted {
                let ready = onLoop(publisherShard.client) { publisherShard.currentCounters }
                if let ready, ready.ready + ready.connectFailures >= c.publishers { break }
                pause(0.02)
            }
            let ready = onLoop(publisherShard.client) { publisherShard.currentCounters }?.ready ?? 0
            if ready < c.publishers {
                outcome.setupErrors.append("\(c.publishers - ready) of \(c.publishers) publishers did not connect")
            }
        }
        // A setup failure ends the run here (exit status 2): figures from a partial setup mislead.
        if !outcome.setupErrors.isEmpty { return finish(outcome, shards, publisherShard) }

        // 3. Publish (and churn) for warm-up + duration; measure the window after the warm-up.
        let runStart = monotonicNanos()
        let windowStart = runStart + Int(c.warmup * 1e9)
        let runEnd = windowStart + Int(c.duration * 1e9)
        let pacer = Pacer()
        if let publisherShard { pacer.start(shard: publisherShard, rate: c.rate, from: runStart, until: runEnd) }
        var churned = 0
        var windowOpen = false
        var lastProgress = monotonicNanos()
        var previous = progressSnapshot(shards, publisherShard, probe)
        while !isInterrupted {
            let now = monotonicNanos()
            if now >= runEnd { break }
            if !windowOpen && now >= windowStart {
                openWindow(shards, publisherShard, probe, outcome: &outcome)
                windowOpen = true
            }
            if c.churn > 0 {
                let due = Int(Double(now - runStart) / 1e9 * c.churn)
                if due > churned { churn(due - churned, shards, startingAt: churned); churned = due }
            }
            if now - lastProgress >= 1_000_000_000 {
                lastProgress = now
                previous = progress(phase: windowOpen ? "measure" : "warm-up", elapsed: seconds(since: runStart),
                                    shards, publisherShard, probe, previous: previous)
            }
            pause(0.01)
        }
        pacer.stop()
        if publisherShard != nil { pacer.wait() }
        if !windowOpen { openWindow(shards, publisherShard, probe, outcome: &outcome) }
        closeWindow(shards, publisherShard, probe, outcome: &outcome)
        outcome.churnRequested = churned

        // 4. Drain: every action acked, every subscriber caught up with the last sequence numbers.
        let drainStart = monotonicNanos()
        if let publisherShard {
            let deadline = drainStart + Int(c.drainTimeout * 1e9)
            var counters = onLoop(publisherShard.client) { publisherShard.currentCounters }
            while let current = counters, current.outstanding > 0, monotonicNanos() < deadline, !isInterrupted {
                pause(0.02)
                counters = onLoop(publisherShard.client) { publisherShard.currentCounters }
            }
            if let targets = onLoop(publisherShard.client, { publisherShard.report().sent }) {
                for shard in shards { shard.client.execute { shard.setTargets(targets) } }
                var behind = totalBehind(shards)
                var lastShown = monotonicNanos()
                var lastProgress = (at: monotonicNanos(), behind: behind)
                while behind > 0, monotonicNanos() < deadline, !isInterrupted {
                    pause(0.02)
                    behind = totalBehind(shards)
                    // Nothing arrived for 3 s: what is missing is lost (an action that failed, say).
                    if behind != lastProgress.behind { lastProgress = (monotonicNanos(), behind) }
                    if monotonicNanos() - lastProgress.at > 3_000_000_000 { break }
                    if monotonicNanos() - lastShown >= 1_000_000_000 {
                        lastShown = monotonicNanos()
                        showLine("drain: \(behind) deliveries still missing")
                    }
                }
                outcome.undelivered = behind
            }
        }
        outcome.drainSeconds = seconds(since: drainStart)
        outcome.interrupted = isInterrupted
        return finish(outcome, shards, publisherShard)
    }

    private func finish(_ outcome: RunOutcome, _ shards: [SubscriberShard], _ publisherShard: PublisherShard?) -> RunOutcome {
        var outcome = outcome
        for shard in shards {
            shard.client.execute { shard.stop() }
            if let report = onLoop(shard.client, { shard.report() }) {
                outcome.subscribers.add(report.counters)
                outcome.connectTimes.add(report.connectTimes)
                outcome.samples += report.samples
            }
        }
        if let publisherShard, let report = onLoop(publisherShard.client, { publisherShard.report() }) {
            outcome.publishers = report.counters
            outcome.samples += report.samples
        }
        clearProgress()
        return outcome
    }

    // MARK: Phases

    private func connectSubscribers(_ shards: [SubscriberShard], outcome: inout RunOutcome) {
        let c = configuration
        let start = monotonicNanos()
        var issued = 0
        var lastCheck = 0
        var lastProgress = start
        var lastChange = start
        var lastDone = -1
        let maxInFlight = 1000
        var current = SubscriberCounters()
        while !isInterrupted {
            let now = monotonicNanos()
            if now - lastCheck >= 50_000_000 || issued == c.clients {
                lastCheck = now
                current = counters(shards)
                let done = current.joined + current.connectFailures
                if done >= c.clients { break }
                if done != lastDone { lastDone = done; lastChange = now }
                if now - lastChange > Int((c.connectTimeout + 5) * 1e9) { break }
            }
            let inFlight = current.connectsStarted - current.joined - current.connectFailures + (issued - current.connectsStarted)
            let allowed = min(c.clients, Int(Double(now - start) / 1e9 * c.ramp) + 1, issued + max(0, maxInFlight - inFlight))
            if allowed > issued {
                issue(issued..<allowed, shards)
                issued = allowed
            }
            if now - lastProgress >= 1_000_000_000 {
                lastProgress = now
                showLine(String(format: "connect %6.1fs  joined %d/%d  failed %d  in flight %d",
                                Double(now - start) / 1e9, current.joined, c.clients, current.connectFailures, max(0, inFlight)))
            }
            pause(issued < c.clients ? 0.005 : 0.02)
        }
    }

    /// Starts subscribers with global indices `range`: global g is local index g / threads on
    /// shard g % threads.
    private func issue(_ range: Range<Int>, _ shards: [SubscriberShard]) {
        let t = shards.count
        for (s, shard) in shards.enumerated() {
            let lower = (range.lowerBound - s + t - 1) / t
            let upper = (range.upperBound - s + t - 1) / t
            if upper > lower { shard.client.execute { shard.connect(lower..<upper) } }
        }
    }

    private func churn(_ count: Int, _ shards: [SubscriberShard], startingAt first: Int) {
        var perShard = Array(repeating: 0, count: shards.count)
        for k in first..<(first + count) { perShard[k % shards.count] += 1 }
        for (shard, n) in zip(shards, perShard) where n > 0 {
            shard.client.execute { shard.churn(n) }
        }
    }

    /// Opens the measurement window: counters first (quick round trips to the loop threads,
    /// each stamped with its own time), then the slower server and process readings.
    private func openWindow(_ shards: [SubscriberShard], _ publisherShard: PublisherShard?, _ probe: ServerProbe, outcome: inout RunOutcome) {
        if let publisherShard, let report = onLoop(publisherShard.client, { publisherShard.report(measure: true) }) {
            outcome.publishersAtStart = report.counters
            outcome.publisherWindow.lowerBound = report.at
        }
        var total = SubscriberCounters()
        var times: [Int] = []
        for shard in shards {
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

    private func closeWindow(_ shards: [SubscriberShard], _ publisherShard: PublisherShard?, _ probe: ServerProbe, outcome: inout RunOutcome) {
        if let publisherShard, let report = onLoop(publisherShard.client, { publisherShard.report(measure: false) }) {
            outcome.publishersAtEnd = report.counters
            outcome.publisherWindow.upperBound = report.at
            outcome.ackTimes.add(report.ackTimes)
        }
        var total = SubscriberCounters()
        var times: [Int] = []
        for shard in shards {
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

    // MARK: Progress

    struct ProgressSnapshot {
        var at: Int
        var subscribers: SubscriberCounters
        var actions: Int
        var serverCPU: Double?
        var ownCPU: Double
    }

    private func progressSnapshot(_ shards: [SubscriberShard], _ publisherShard: PublisherShard?, _ probe: ServerProbe) -> ProgressSnapshot {
        let actions = publisherShard.flatMap { p in onLoop(p.client) { p.currentCounters.actionsSent } } ?? 0
        return ProgressSnapshot(at: monotonicNanos(), subscribers: counters(shards), actions: actions,
                                serverCPU: probe.sample(withMetrics: false).cpuSeconds, ownCPU: OwnUsage.now().cpuSeconds)
    }

    private func progress(phase: String, elapsed: Double, _ shards: [SubscriberShard], _ publisherShard: PublisherShard?,
                          _ probe: ServerProbe, previous: ProgressSnapshot) -> ProgressSnapshot {
        var interval = makeLatencyHistogram()
        var total = SubscriberCounters()
        for shard in shards {
            if let report = onLoop(shard.client, { shard.report(takeInterval: true) }) {
                total.add(report.counters)
                interval.add(report.interval)
            }
        }
        let publisher = publisherShard.flatMap { p in onLoop(p.client) { p.currentCounters } }
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
        showLine(line)
        return ProgressSnapshot(at: now, subscribers: total, actions: actions, serverCPU: server.cpuSeconds, ownCPU: own)
    }

    private func showLine(_ line: String) {
        guard showProgress else { return }
        if isTerminal {
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
            progressLines = 1
        } else {
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
    }

    private func clearProgress() {
        if isTerminal && progressLines > 0 {
            FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
            progressLines = 0
        }
    }

    // MARK: Helpers

    private func counters(_ shards: [SubscriberShard]) -> SubscriberCounters {
        var total = SubscriberCounters()
        for shard in shards {
            if let counters = onLoop(shard.client, { shard.currentCounters }) { total.add(counters) }
        }
        return total
    }

    private func totalBehind(_ shards: [SubscriberShard]) -> Int {
        shards.reduce(0) { sum, shard in sum + (onLoop(shard.client) { shard.currentBehind } ?? 0) }
    }

    private var isInterrupted: Bool { interrupted.load(ordering: .relaxed) }

    private func pause(_ seconds: Double) {
        var wait = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        nanosleep(&wait, nil)
    }

    private func seconds(since start: Int) -> Double {
        Double(monotonicNanos() - start) / 1e9
    }
}

func formatMicros(_ micros: UInt64?) -> String {
    guard let micros else { return "-" }
    if micros < 1000 { return "\(micros)µs" }
    if micros < 10_000 { return String(format: "%.2fms", Double(micros) / 1000) }
    if micros < 1_000_000 { return String(format: "%.1fms", Double(micros) / 1000) }
    return String(format: "%.2fs", Double(micros) / 1e6)
}
