import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// `tether-load` against real daemons: short runs must check out clean (exit 0) and report
/// sensible figures in their `--json` line, over ws:// and wss://, spread over several URLs, in
/// rooms of their own; bad arguments and failed set-ups must say so in one line.
@Suite("End to end: tether-load", .serialized)
struct LoadToolTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String

        /// The `--json` line (the last line on stdout).
        func result() throws -> JSON {
            let line = try #require(stdout.split(separator: "\n").last, "no --json line:\n\(stderr)")
            return try JSONParser().parse(String(line))
        }

        /// Non-empty lines on stderr.
        var errorLines: [Substring] { stderr.split(separator: "\n") }
    }

    static func runLoad(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> Run {
        let run = try runProgram(Daemon.executable("tether-load"), arguments, timeout: timeout)
        return Run(status: run.status, stdout: run.stdout, stderr: run.stderr)
    }

    static func number(_ result: JSON, _ key: String) -> Double {
        switch result[key] {
        case .int(let value)?: return Double(value)
        case .double(let value)?: return value
        default: return .nan
        }
    }

    @Test func fiftySubscribersForThreeSecondsCheckOutClean() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let clients = 50
        let run = try Self.runLoad([
            "--url", daemon.url, "--server-pid", String(daemon.pid), "--clients", String(clients),
            "--rate", "40", "--duration", "3", "--warmup", "0.5", "--json", "--quiet", "--label", "e2e",
            "--payload-bytes", "64", "--verify-scanner",  // every patch frame also fully decoded and compared
        ])
        #expect(run.status == 0, "tether-load failed:\n\(run.stderr)\n\(run.stdout)")
        let result = try run.result()
        func number(_ key: String) -> Double { Self.number(result, key) }
        #expect(result["ok"] == true)
        #expect(result["label"] == "e2e")
        #expect(number("connected") == Double(clients))
        for key in ["lost", "duplicates", "gaps", "out_of_order", "protocol_errors", "errors", "unacked", "ack_mismatches", "disconnects"] {
            #expect(number(key) == 0, "\(key) should be 0: \(result)")
        }
        // Every action reached every subscriber exactly once, over the whole run...
        #expect(number("actions_sent") > 100)
        #expect(number("deliveries") == number("actions_sent") * Double(clients))
        #expect(number("acks") == number("actions_sent"))
        // ...and, over the measured window, delivered ≈ offered actions × subscribers.
        let offered = number("offered_actions_per_s")
        #expect(abs(offered - 40) < 4, "offered \(offered) actions/s for --rate 40")
        let delivered = number("delivered_per_s")
        #expect(abs(delivered / (offered * Double(clients)) - 1) < 0.1, "delivered \(delivered)/s for \(offered) actions/s × \(clients)")
        // Latencies are real, positive and ordered.
        let p50 = number("latency_p50_ms"), p99 = number("latency_p99_ms"), max = number("latency_max_ms")
        #expect(p50 > 0 && p50 <= p99 && p99 <= max && max < 5_000, "p50 \(p50) p99 \(p99) max \(max)")
        #expect(number("latency_samples") > 1000)
        // Server figures came from /proc for the given pid.
        #expect(result["server_source"] == "proc")
        #expect(result["server_pids"] == .array([.int(Int(daemon.pid))]))
        #expect(number("server_cpu_s") >= 0)
        #expect(number("server_rss_bytes") > 1_000_000)
        #expect(number("load_cpu_s") > 0)
    }

    /// `--server-pid` is what the figures come from, even when another pid listens on the port.
    @Test func serverPidNamesTheProcessMeasured() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let other = getpid()  // the test process itself: not the daemon
        let run = try Self.runLoad(["--url", daemon.url, "--server-pid", String(other), "--clients", "2", "--rate", "0",
                                    "--duration", "0.2", "--warmup", "0", "--json", "--quiet"])
        #expect(run.status == 0, "\(run.stderr)\n\(run.stdout)")
        #expect(try run.result()["server_pids"] == .array([.int(Int(other))]))
    }

    /// tether-load's checks must be able to fail: a server that sends subscribers a presence
    /// stream they did not ask for (no --presence) fails the run.
    @Test func unrequestedPresenceFramesFailTheRun() throws {
        let server = try ScriptedServer(greeting: [#"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#]) { text in
            guard let json = try? JSON(parsing: text), let room = json["room"]?.stringValue else { return [] }
            let id = json["id"]?.intValue.map { ",\"id\":\($0)" } ?? ""
            switch json["type"]?.stringValue {
            case "join":
                return [#"{"type":"snapshot","room":"\#(room)","epoch":"e","version":0,"state":{"fields":{}}}"#,
                        #"{"type":"presence","room":"\#(room)","version":1,"members":{}}"#,
                        #"{"type":"ack","room":"\#(room)","version":0\#(id)}"#]
            case "action":
                return [#"{"type":"ack","room":"\#(room)","version":0\#(id)}"#]
            default:
                return []
            }
        }
        defer { server.stop() }
        let run = try Self.runLoad(["--url", server.url, "--clients", "2", "--rate", "1", "--duration", "1", "--json", "--quiet"])
        #expect(run.status == 1, "\(run.stderr)\n\(run.stdout)\n\(server.received.prefix(5))")
        #expect(run.stderr.contains("unrequested presence") || run.stdout.contains("unrequested presence"), "\(run.stderr)\n\(run.stdout)")
    }

    @Test func anUnreachableServerIsOneLineAndExitStatus2() throws {
        let port = try freePort()  // nothing listens there
        let url = "ws://127.0.0.1:\(port)"
        let run = try Self.runLoad(["--url", url, "--clients", "2", "--duration", "1", "--json", "--quiet"])
        #expect(run.status == 2, "\(run.stderr)\n\(run.stdout)")
        // One line naming the server, no table of zeros.
        #expect(run.errorLines.count == 1, "\(run.stderr)")
        #expect(run.errorLines.first?.hasPrefix("tether-load: ") == true && run.stderr.contains(url), "\(run.stderr)")
        #expect(!run.stderr.contains("connected") && !run.stderr.contains("checks"), "\(run.stderr)")
        let result = try run.result()
        #expect(result["ok"] == false)
        #expect(result["exit_code"] == 2)
        #expect(result["setup_error"]?.stringValue?.contains(url) == true, "\(result)")
        #expect(result["connected"] == nil, "no figures for a run that did not start: \(result)")
        // The table mode (no --json) says the same in the same one line.
        let plain = try Self.runLoad(["--url", url, "--clients", "2", "--duration", "1", "--quiet"])
        #expect(plain.status == 2)
        #expect(plain.stdout.isEmpty && plain.errorLines.count == 1, "\(plain.stdout)\(plain.stderr)")
    }

    /// Like `tether`, tether-load takes the server from $TETHER_URL when --url is not given.
    @Test func theURLComesFromTheEnvironment() throws {
        let url = "ws://127.0.0.1:\(try freePort())"  // nothing listens there
        let run = try runProgram(Daemon.executable("tether-load"), ["--clients", "1", "--duration", "1", "--quiet"],
                                 environment: ProcessInfo.processInfo.environment.merging(["TETHER_URL": url]) { _, new in new })
        #expect(run.status == 2 && run.stderr.contains(url), "\(run.stderr)")
        let help = try runProgram(Daemon.executable("tether-load"), ["--help"]).stdout
        #expect(help.contains("TETHER_URL"), "\(help)")
    }

    @Test func usageErrorsExit64WithOneLine() throws {
        let cases: [[String]] = [
            ["--clients", "0"], ["--clients", "-3"], ["--clients", "many"], ["--rooms", "0"], ["--clients", "2", "--rooms", "3"],
            ["--rate", "-1"], ["--rate", "nan"], ["--publishers", "0"], ["--duration", "0"], ["--duration", "inf"],
            ["--warmup", "-1"], ["--ramp", "0"], ["--churn", "inf"], ["--payload-bytes", "-1"], ["--threads", "0"],
            ["--drain-timeout", "inf"], ["--connect-timeout", "0"], ["--server-pid", "0"],
            ["--url", "http://127.0.0.1:8080"], ["--url", "ws://"], ["--url", "ws://127.0.0.1:1,"],
            ["--url", "ws://127.0.0.1:1,ws://127.0.0.1:2", "--server-pid", "5"],
            ["--ca", "/nonexistent/ca.pem"], ["--ca", "/dev/null", "--insecure"], ["--bogus"],
        ]
        for arguments in cases {
            let run = try Self.runLoad(arguments + ["--quiet"], timeout: .seconds(20))
            #expect(run.status == 64, "\(arguments): exit \(run.status)\n\(run.stderr)")
            #expect(run.errorLines.count == 1 && run.stderr.hasPrefix("tether-load: "), "\(arguments):\n\(run.stderr)")
            #expect(run.stdout.isEmpty, "\(arguments):\n\(run.stdout)")
        }
        let help = try Self.runLoad(["--help"])
        #expect(help.status == 0 && help.stdout.contains("--insecure"), "\(help.stdout)")
    }

    /// Every run writes into rooms of its own: the shared `bench` room stays untouched, and a
    /// second run does not find the first one's values.
    @Test func runsUseFreshRoomsAndLeaveBenchAlone() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        var prefixes: [String] = []
        for _ in 0..<2 {
            let run = try Self.runLoad(["--url", daemon.url, "--clients", "4", "--rooms", "2", "--rate", "20",
                                        "--duration", "0.5", "--warmup", "0", "--json", "--quiet"])
            #expect(run.status == 0, "\(run.stderr)\n\(run.stdout)")
            let result = try run.result()
            let prefix = try #require(result["room_prefix"]?.stringValue, "\(result)")
            #expect(prefix.hasPrefix("bench:load-"), "\(prefix)")
            prefixes.append(prefix)
        }
        #expect(prefixes[0] != prefixes[1])
        func fields(_ room: String) throws -> JSON? {
            let socket = try RawWebSocket(port: daemon.port)
            _ = try socket.receiveJSON()  // hello
            try socket.send(json: ["type": "join", "room": .string(room)])
            let snapshot = try socket.receiveJSON(until: { $0["type"] == "snapshot" })
            return snapshot["state"]?["fields"]
        }
        #expect(try fields("bench") == .object([:]), "the shared bench room was written to")
        for prefix in prefixes {
            let state = try fields(prefix + "2")
            guard case .object(let members)? = state else { Issue.record("no fields in \(prefix)2"); continue }
            #expect(members.count == 1, "one field per publisher in \(prefix)2: \(members.keys)")
        }
    }

    /// wss://: trusted through --ca or --insecure; without either, one line says what to pass.
    @Test func loadTestsOverTLS() async throws {
        let tls = try await MainActor.run { try SecurityTests.makeCertificate() }
        let daemon = try Daemon(arguments: ["--tls-cert", tls.cert, "--tls-key", tls.key])
        defer { daemon.stop() }
        let url = "wss://127.0.0.1:\(daemon.port)"
        let clients = 20
        for trust in [["--ca", tls.cert], ["--insecure"]] {
            let run = try Self.runLoad(["--url", url, "--clients", String(clients), "--rate", "20", "--duration", "1",
                                        "--warmup", "0.2", "--json", "--quiet"] + trust)
            #expect(run.status == 0, "\(trust): \(run.stderr)\n\(run.stdout)")
            let result = try run.result()
            #expect(result["ok"] == true)
            #expect(Self.number(result, "connected") == Double(clients))
            #expect(Self.number(result, "actions_sent") >= 15)
            #expect(Self.number(result, "deliveries") == Self.number(result, "actions_sent") * Double(clients), "\(result)")
            #expect(result["server_source"] == "proc", "the local daemon's pid is found for wss:// too")
            #expect(Self.number(result, "server_cpu_s") >= 0)
        }
        let untrusted = try Self.runLoad(["--url", url, "--clients", "2", "--duration", "1", "--quiet"])
        #expect(untrusted.status == 2, "\(untrusted.stderr)")
        #expect(untrusted.errorLines.count == 1, "\(untrusted.stderr)")
        #expect(untrusted.stderr.contains("TLS") && untrusted.stderr.contains("--ca"), "\(untrusted.stderr)")
    }

    /// `--url A,B`: connections go to the URLs in turn (a cluster's nodes; here two independent
    /// daemons, idle connections only since they share no rooms).
    @Test func connectionsAreSpreadOverSeveralURLs() throws {
        let first = try Daemon(), second = try Daemon()
        defer { first.stop(); second.stop() }
        let run = try Self.runLoad(["--url", "\(first.url),\(second.url)", "--server-pid", "\(first.pid),\(second.pid)",
                                    "--clients", "10", "--rate", "0", "--duration", "0.5", "--warmup", "0", "--json", "--quiet"])
        #expect(run.status == 0, "\(run.stderr)\n\(run.stdout)")
        let result = try run.result()
        #expect(Self.number(result, "connected") == 10)
        #expect(result["server_pids"] == .array([.int(Int(first.pid)), .int(Int(second.pid))]))
        for daemon in [first, second] {
            let metrics = try daemon.httpGET("/metrics").body
            let opened = metrics.split(separator: "\n").first { $0.hasPrefix("tether_connections_opened_total ") }
            #expect(opened?.split(separator: " ").last.flatMap { Double($0) } == 5, "\(daemon.url): \(opened ?? "no counter")")
        }
    }

    /// `--source-addresses 3`: the subscribers come from 127.0.0.2, .3 and .4, as a daemon that
    /// allows 2 connections per address shows by taking all 6 (from one address it takes 2).
    @Test func subscribersAreSpreadOverSourceAddresses() throws {
        let daemon = try Daemon(arguments: ["--max-connections-per-ip", "2"])
        defer { daemon.stop() }
        let arguments = ["--url", daemon.url, "--clients", "6", "--rate", "0", "--duration", "0.5", "--warmup", "0",
                         "--drain-timeout", "1", "--connect-timeout", "2", "--json", "--quiet"]
        let spread = try Self.runLoad(arguments + ["--source-addresses", "3"])
        #expect(spread.status == 0, "\(spread.stderr)\n\(spread.stdout)")
        #expect(Self.number(try spread.result(), "connected") == 6)
        let single = try Self.runLoad(arguments)
        #expect(single.status != 0, "from one address the limit refuses 4 of the 6")
    }

    static let loadtestScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Scripts/loadtest.sh")

    /// `--help` is the script's header comment, nothing after it; bad arguments are usage errors.
    @Test func loadtestScriptHelpAndUsageErrors() throws {
        let help = try runProgram(Self.loadtestScript, ["--help"])
        #expect(help.status == 0)
        let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("Load-tests tetherd") == true, "\(help.stdout)")
        #expect(lines.contains { $0.hasPrefix("Usage: Scripts/loadtest.sh") })
        #expect(!lines.contains { $0.contains("set -e") || $0.hasPrefix("#") }, "code in the help:\n\(help.stdout)")
        for arguments in [["--bogus"], ["--runs"], ["--runs", "0"], ["--scenario", "nope"]] {
            let run = try runProgram(Self.loadtestScript, arguments)
            #expect(run.status == 64, "\(arguments): \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(arguments): \(run.stderr)")
        }
    }
}
