import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// `tether-load` against a real daemon: a short run with 50 subscribers must check out clean
/// (exit 0) and report sensible figures in its `--json` line.
@Suite("End to end: tether-load", .serialized)
struct LoadToolTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func runLoad(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> Run {
        let process = Process()
        process.executableURL = Daemon.executable("tether-load")
        process.arguments = arguments
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Read both pipes while it runs (a full pipe would block it).
        nonisolated(unsafe) var errorData = Data()
        let reader = Thread { errorData = stderr.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let outputData = stdout.fileHandleForReading.readDataToEndOfFile()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning {
            process.interrupt()
            Thread.sleep(forTimeInterval: 2)
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        while reader.isExecuting || !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        return Run(status: process.terminationStatus, stdout: String(decoding: outputData, as: UTF8.self),
                   stderr: String(decoding: errorData, as: UTF8.self))
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
        let line = try #require(run.stdout.split(separator: "\n").last, "no --json line:\n\(run.stderr)")
        let result = try JSONParser().parse(String(line))
        func number(_ key: String) -> Double {
            switch result[key] {
            case .int(let value)?: return Double(value)
            case .double(let value)?: return value
            default: return .nan
            }
        }
        #expect(result["ok"] == true)
        #expect(result["label"] == "e2e")
        #expect(number("connected") == Double(clients))
        for key in ["lost", "duplicates", "gaps", "out_of_order", "protocol_errors", "errors", "unacked", "ack_mismatches", "disconnects"] {
            #expect(number(key) == 0, "\(key) should be 0: \(line)")
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
        #expect(number("server_cpu_s") >= 0)
        #expect(number("server_rss_bytes") > 1_000_000)
        #expect(number("load_cpu_s") > 0)
    }

    @Test func anUnreachableServerIsASetupErrorWithExitStatus2() throws {
        let port = try freePort()  // nothing listens there
        let run = try Self.runLoad(["--url", "ws://127.0.0.1:\(port)", "--clients", "2", "--duration", "1", "--json", "--quiet"])
        #expect(run.status == 2, "\(run.stderr)\n\(run.stdout)")
        let line = try #require(run.stdout.split(separator: "\n").last)
        let result = try JSONParser().parse(String(line))
        #expect(result["ok"] == false)
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
