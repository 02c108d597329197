import ArgumentParser
import Foundation
import Logging
import TetherTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tether-load`: many Tether clients in one process, checking every stream and measuring
/// latency, throughput and the server's cost. See `tether-load --help` and docs/LOAD-TESTING.md.
@main
struct TetherLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tether-load",
        abstract: "Load generator for tetherd: many subscribers, paced publishers, every stream checked.",
        discussion: """
            Subscribers (--clients) join --rooms bench rooms and check their streams: gapless \
            versions, every published sequence number exactly once. Publishers (--publishers, extra \
            connections that join nothing) send `set` actions at --rate per second in total, each \
            value carrying its monotonic send time; a subscriber's latency is its receive time minus \
            that. With --rate 0 the connections stay idle (memory per connection).

            Every run writes into rooms of its own, bench:load-RUN-1 ... bench:load-RUN-N, where RUN \
            is a random number chosen per run (the --json line's room_prefix): it never touches the \
            shared `bench` room or another run's rooms. A daemon that persists rooms keeps these \
            small rooms (one field per publisher); point load runs at a daemon whose data you can \
            throw away.

            Exit status: 0 when nothing was lost, duplicated or out of order and every action was \
            acked; 1 otherwise; 2 when the run could not be set up (server unreachable, connections \
            refused: one line on stderr says why); 64 for usage errors.
            """)

    static let defaultURL = "ws://127.0.0.1:8080/"

    @Option(help: ArgumentHelp(
        "Server URL (ws:// or wss://); several, comma-separated, spread the connections over them in turn. Default: $TETHER_URL (as for tether), else \(defaultURL).",
        discussion: "Several URLs are the nodes of one cluster: independent daemons share no rooms, so only --rate 0 checks out against them.",
        valueName: "url[,url...]"))
    var url: String?

    @Option(help: ArgumentHelp("Trust this CA certificate (PEM) for wss://, e.g. one from Scripts/make-cert.sh.", valueName: "pem-file"))
    var ca: String?

    @Flag(help: "Accept any wss:// certificate (tests only: encrypted, not authenticated).")
    var insecure = false

    @Flag(help: "Every connection offers permessage-deflate (a server with --compression on then sends large frames compressed).")
    var compression = false

    @Option(help: "Subscriber connections.")
    var clients = 100

    @Option(help: "Rooms the subscribers are spread over (this run's own: bench:load-RUN-1 ... bench:load-RUN-N).")
    var rooms = 1

    @Option(help: ArgumentHelp(
        "The rooms' kind: bench, or bench-views10 / bench-viewers (per-viewer values: 10 distinct views, or one per subscriber), or bench-presence (bench that keeps presence); all but bench need tetherd --test-kinds.",
        valueName: "kind"))
    var kind = "bench"

    @Option(help: ArgumentHelp(
        "Spread the subscribers over this many loopback source addresses (127.0.0.2, 127.0.0.3, ...); 0: the system's choice.",
        discussion: "For a server on this machine and tens of thousands of connections: each source address has its own ephemeral ports, so the kernel's search for a free one stays short."))
    var sourceAddresses = 0

    @Flag(help: "Subscribers join with presence ({\"name\": \"tether-load\"}): with --kind bench-presence, each join and leave is a presence change every member receives.")
    var presence = false

    @Flag(help: "Publishers say a hello with a client id and number their actions (seq), as clients that send an action again do: the rooms keep each number's outcome.")
    var numbered = false

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

    @Option(help: "First connections open at once, at most (0: no limit; with a huge --ramp, every subscriber connects at once).")
    var maxInFlight = 1000

    @Flag(help: ArgumentHelp(
        "The server restarts during the run: a going-away close (1001), or a connection cut while it stops, is no failure; subscribers retry with backoff until it listens again, then resume.",
        discussion: "Retries back off from 20 ms to 1 s (with jitter) for up to 60 s per subscriber, at most --max-in-flight of them at a time (each service thread its share; the others wait their turn). The --json line adds resumed_all_after_s (first reconnect that opened to the last subscriber resumed) and last_resume_unix_s."))
    var expectRestart = false

    @Option(help: "Padding bytes in every action's value.")
    var payloadBytes = 0

    @Option(help: "Subscriber disconnects per second while actions flow; each reconnects and resumes with `since`.")
    var churn: Double = 0

    @Option(help: "Access token sent in every join.")
    var token: String?

    @Option(help: "Subscriber service threads (one lws context each).")
    var threads = 1

    @Option(help: ArgumentHelp(
        "The server's pid, to read its CPU and memory from /proc (found automatically for a local URL); one per --url, comma-separated.",
        valueName: "pid[,pid...]"))
    var serverPid: String?

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
            if exitCode(for: error) == .success {  // --help
                print(fullMessage(for: error))
                Glibc.exit(0)
            }
            // One line: what is wrong, and where to look.
            let message = Self.message(for: error).split(whereSeparator: \.isNewline).joined(separator: " ")
            FileHandle.standardError.write(Data("tether-load: \(message) (see tether-load --help)\n".utf8))
            Glibc.exit(ExitStatus.usage)
        }
    }

    /// Longest time any option may ask for (seconds): about eleven days.
    static let longestSeconds = 1e6

    func validate() throws {
        func seconds(_ value: Double, _ name: String, zeroAllowed: Bool) throws {
            guard value.isFinite, zeroAllowed ? value >= 0 : value > 0, value <= Self.longestSeconds else {
                throw ValidationError("\(name) takes seconds, \(zeroAllowed ? "0" : "above 0") to \(Int(Self.longestSeconds)), not \(value)")
            }
        }
        guard clients >= 1 else { throw ValidationError("--clients must be at least 1, not \(clients)") }
        guard rooms >= 1, rooms <= clients else { throw ValidationError("--rooms must be between 1 and --clients (\(clients)), not \(rooms)") }
        guard rate.isFinite, rate >= 0 else { throw ValidationError("--rate must be 0 or more actions per second, not \(rate)") }
        guard publishers >= 0 else { throw ValidationError("--publishers must be 0 or more, not \(publishers)") }
        guard rate == 0 || publishers >= 1 else { throw ValidationError("--publishers must be at least 1 when --rate is above 0") }
        try seconds(duration, "--duration", zeroAllowed: false)
        try seconds(warmup, "--warmup", zeroAllowed: true)
        try seconds(drainTimeout, "--drain-timeout", zeroAllowed: true)
        try seconds(connectTimeout, "--connect-timeout", zeroAllowed: false)
        guard (0...250).contains(sourceAddresses) else { throw ValidationError("--source-addresses must be between 0 and 250, not \(sourceAddresses)") }
        guard maxInFlight >= 0 else { throw ValidationError("--max-in-flight must be 0 or more, not \(maxInFlight)") }
        guard ramp.isFinite, ramp > 0 else { throw ValidationError("--ramp must be above 0 connections per second, not \(ramp)") }
        guard churn.isFinite, churn >= 0 else { throw ValidationError("--churn must be 0 or more per second, not \(churn)") }
        guard payloadBytes >= 0, payloadBytes <= 512 << 10 else { throw ValidationError("--payload-bytes must be between 0 and 524288, not \(payloadBytes)") }
        guard threads >= 1, threads <= 16 else { throw ValidationError("--threads must be between 1 and 16, not \(threads)") }
        guard (batchMicros ?? 0) >= 0, (batchMicros ?? 0) <= 100_000 else { throw ValidationError("--batch-micros must be between 0 and 100000") }
        for url in urls {
            let scheme = url.prefix { $0 != ":" }.lowercased()
            guard (scheme == "ws" || scheme == "wss"), url.dropFirst(scheme.count).hasPrefix("://"),
                  let host = url.dropFirst(scheme.count + 3).split(separator: "/", omittingEmptySubsequences: false).first, !host.isEmpty else {
                throw ValidationError("--url takes ws://HOST[:PORT][/PATH] or wss://..., comma-separated; '\(url)' is not one")
            }
        }
        if let pids = try serverPids, pids.count != urls.count {
            throw ValidationError("--server-pid takes one pid per --url (\(urls.count)), not \(pids.count)")
        }
        if ca != nil, insecure { throw ValidationError("--ca and --insecure don't go together") }
        if let ca, !FileManager.default.isReadableFile(atPath: ca) { throw ValidationError("--ca: cannot read '\(ca)'") }
    }

    /// `--url` (else $TETHER_URL, else the default), split at commas.
    var urls: [String] {
        let environment = ProcessInfo.processInfo.environment["TETHER_URL"].flatMap { $0.isEmpty ? nil : $0 }
        return (url ?? environment ?? Self.defaultURL).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }

    /// `--server-pid`, split at commas (nil when not given).
    var serverPids: [Int32]? {
        get throws {
            guard let serverPid else { return nil }
            return try serverPid.split(separator: ",", omittingEmptySubsequences: false).map { text in
                guard let pid = Int32(text), pid > 0 else { throw ValidationError("--server-pid takes process ids, not '\(serverPid)'") }
                return pid
            }
        }
    }

    var trust: TLSTrust {
        if let ca { return .caFile(ca) }
        return insecure ? .insecure : .system
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
        Interruption.install()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .error
            return handler
        }
        var configuration = LoadConfiguration(
            urls: urls, trust: trust, compression: compression, serverPids: try? serverPids, clients: clients, rooms: rooms, publishers: rate > 0 ? publishers : 0, rate: rate,
            duration: duration, warmup: warmup, ramp: ramp, maxInFlight: maxInFlight, expectRestart: expectRestart, payloadBytes: payloadBytes, churn: churn,
            token: token, threads: max(1, min(threads, max(1, clients))), drainTimeout: drainTimeout,
            connectTimeout: connectTimeout, batchNanos: (batchMicros ?? Self.automaticBatchMicros(connectionsPerThread: clients / max(1, threads))) * 1000, verifyScanner: verifyScanner,
            runTag: Int.random(in: 1..<(1 << 30)))
        configuration.kind = kind
        configuration.presence = presence
        configuration.numbered = numbered
        configuration.sourceAddresses = sourceAddresses
        let runner = LoadRun(configuration: configuration, showProgress: !quiet, label: label)
        let outcome = runner.run()
        if let failure = outcome.setupFailure {
            FileHandle.standardError.write(Data("tether-load: \(failure)\n".utf8))
            if json { outcome.printSetupFailureJSON() }
        } else {
            outcome.printSummary(toStandardError: json)
            if json { outcome.printJSON() }
        }
        return outcome.exitStatus
    }
}

/// tether-load's exit statuses.
enum ExitStatus {
    static let ok: Int32 = 0
    /// Something lost, duplicated, out of order, unacked...
    static let violations: Int32 = 1
    /// The run could not start: server unreachable, connections that did not open.
    static let setupFailed: Int32 = 2
    /// A bad option (sysexits' EX_USAGE, as `tether` and `tetherd`).
    static let usage: Int32 = 64
}
