import ArgumentParser
import Foundation
import Logging

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
            Glibc.exit(ExitStatus.usage)
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
        Interruption.install()
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

/// tether-load's exit statuses.
enum ExitStatus {
    static let ok: Int32 = 0
    /// Something lost, duplicated, out of order, unacked...
    static let violations: Int32 = 1
    static let usage: Int32 = 2
}
