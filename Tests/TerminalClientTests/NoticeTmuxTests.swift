import Foundation
import Testing
import TetherTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A press the daemon does not answer shows at once (predicted) and says it waits; it counts once whatever happens to the
/// daemon: stopped (SIGSTOP) and continued, or killed with the press unread and restarted (the
/// client sends it again under its number).
@Suite("tether presses wait for the server and count once", .serialized, .timeLimit(.minutes(3)))
struct NoticeTmuxTests {
    @Test func aPressCountsOnceAcrossAStoppedAndAKilledDaemon() async throws {
        let port = try freePort()
        let data = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        var daemon = try Daemon(port: port, dataDirectory: data)
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("counter", ["--url", daemon.url, "--timeout", "1", "counter"])
        try await tmux.waitFor("counter", "live") { $0.statusConnection == "live" && $0.contains("count: 0") }

        // The daemon stops answering: the press waits (past --timeout: it was sent), then counts.
        try daemon.pause()
        // Nobody else answers on its port (a stopped daemon's kernel still accepts connections).
        #expect(try Self.listeners(on: daemon.port) == 1, "one listening socket on the daemon's port")
        try tmux.type("counter", "+")
        // Predicted: the count moves at once, and the press says it waits.
        try await tmux.waitFor("counter", "the predicted count and the waiting line") {
            $0.contains("count: 1") && $0.contains("1 press waiting for the server")
        }
        try await Task.sleep(for: .milliseconds(1200))
        daemon.resume()
        let applied = try await tmux.waitFor("counter", "the answer", timeout: .seconds(15)) {
            $0.contains("count: 1") && !$0.contains("waiting for the server")
        }
        #expect(!applied.contains("may or may not") && !applied.contains("✗"), "\(applied)")

        // Stopped again, a press, then kill -9: the press never reached the room, and goes again.
        try daemon.pause()
        try tmux.type("counter", "+")
        try await Task.sleep(for: .milliseconds(300))  // sent, unread by the stopped daemon
        daemon.kill9()
        try await tmux.waitFor("counter", "the dropped connection") {
            $0.contains("1 press waiting for the server") && $0.statusConnection?.hasPrefix("reconnecting (attempt ") == true
        }
        daemon = try Daemon(port: port, dataDirectory: data)
        let counted = try await tmux.waitFor("counter", "the press counted", timeout: .seconds(20)) {
            $0.contains("count: 2") && $0.statusConnection == "live" && !$0.contains("waiting for the server")
        }
        #expect(!counted.contains("may or may not") && !counted.contains("✗"), "\(counted)")
    }

    /// Listening TCP sockets on `port` (any address), from /proc/net/tcp and tcp6.
    static func listeners(on port: Int) throws -> Int {
        let hexPort = String(format: ":%04X", port)
        var count = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                if fields.count > 3, fields[1].hasSuffix(hexPort), fields[3] == "0A" { count += 1 }
            }
        }
        return count
    }
}
