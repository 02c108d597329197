import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// A reconnect storm loses nothing: 500 tether-load subscribers joined to one daemon, which is
/// stopped (SIGTERM: a 1001 close to each) and started again on the same port and data folder.
/// Every subscriber must retry until it listens again and resume its stream where it left it,
/// with no gap, no loss and no unplanned disconnect, though only 20 may reconnect at a time.
@Suite("End to end: reconnect storm", .serialized)
struct ReconnectStormTests {
    @Test func fiveHundredSubscribersResumeAfterARestart() throws {
        let clients = 500
        var daemon = try Daemon()
        defer { daemon.stop() }
        let port = daemon.port, data = daemon.dataDirectory

        // tether-load in the background; its stderr says when every subscriber joined.
        let errorFile = Daemon.temporaryDirectory() + "/load.err"
        _ = FileManager.default.createFile(atPath: errorFile, contents: nil)
        let load = Process()
        load.executableURL = Daemon.executable("tether-load")
        load.arguments = ["--url", daemon.url, "--clients", String(clients), "--rate", "0", "--duration", "4",
                          "--warmup", "0", "--expect-restart", "--drain-timeout", "15", "--json", "--quiet",
                          // Reconnects take turns, 20 at a time: each ends (opened or refused) and passes its turn on.
                          "--max-in-flight", "20"]
        let output = Pipe()
        load.standardOutput = output
        load.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorFile))
        try load.run()
        defer { if load.isRunning { kill(load.processIdentifier, SIGKILL) } }
        try waitUntil("every subscriber joined", timeout: .seconds(20)) {
            let text = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
            #expect(load.isRunning, "tether-load ended early: \(text)")
            return text.contains("ready for a restart") || !load.isRunning
        }

        #expect(daemon.stop() == 0)
        daemon = try Daemon(port: port, dataDirectory: data)

        try waitUntil("tether-load finished", timeout: .seconds(30)) { !load.isRunning }
        let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
        #expect(load.terminationStatus == 0, "tether-load failed:\n\(stderr)\n\(stdout)")
        let line = try #require(stdout.split(separator: "\n").last, "no --json line:\n\(stderr)")
        let result = try JSONParser().parse(String(line))
        func number(_ key: String) -> Double { LoadToolTests.number(result, key) }

        #expect(number("connected") == Double(clients))
        // Every subscriber got the going-away close, came back and resumed (all of them live).
        #expect(number("restart_closes") == Double(clients), "\(result)")
        #expect(number("live_at_end") == Double(clients), "\(result)")
        #expect(number("resumes_history") + number("resumes_snapshot") == Double(clients), "\(result)")
        // The room is stored: its epoch survives the restart, so resumes are patches from the
        // subscriber's own version (a snapshot would mean the stream was not continued).
        #expect(number("resumes_history") == Double(clients), "\(result)")
        for key in ["lost", "duplicates", "gaps", "out_of_order", "protocol_errors", "errors", "disconnects", "reconnect_failures"] {
            #expect(number(key) == 0, "\(key) should be 0: \(result)")
        }
        let resumedAfter = number("resumed_all_after_s")
        #expect(resumedAfter >= 0 && resumedAfter < 5, "resumed_all_after_s \(resumedAfter)")
    }
}
