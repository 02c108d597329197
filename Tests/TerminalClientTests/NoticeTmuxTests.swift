import Foundation
import Testing
import TetherTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The notice line of an action whose answer did not come follows what became of it: a late
/// ack says it was applied; after a crash, the room found unchanged on reconnecting says it was
/// not. The daemon is stopped with SIGSTOP, so the press is in flight for certain.
@Suite("tether notices follow what happened to an action", .serialized, .timeLimit(.minutes(3)))
struct NoticeTmuxTests {
    @Test func aLateAckAndACrashAreBothReportedAsWhatHappened() async throws {
        let port = try freePort()
        let data = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        var daemon = try Daemon(port: port, dataDirectory: data)
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("counter", ["--url", daemon.url, "--timeout", "1", "counter"])
        try await tmux.waitFor("counter", "live") { $0.statusConnection == "live" && $0.contains("count: 0") }

        // The daemon stops answering: the press times out; the daemon goes on and applies it.
        kill(daemon.pid, SIGSTOP)
        try tmux.type("counter", "+")
        try await tmux.waitFor("counter", "the unknown outcome") { $0.contains("? increment: no answer from the server in time") }
        kill(daemon.pid, SIGCONT)
        let applied = try await tmux.waitFor("counter", "the late ack", timeout: .seconds(15)) { $0.contains("✓ increment was applied after all") }
        #expect(applied.contains("count: 1"))
        #expect(!applied.contains("may or may not"), "\(applied)")

        // Stopped again, a press, then kill -9: the press never reached the room.
        kill(daemon.pid, SIGSTOP)
        try tmux.type("counter", "+")
        try await Task.sleep(for: .milliseconds(300))  // sent, unread by the stopped daemon
        daemon.kill9()
        // The drop or the timeout, whichever the client noticed first: an unknown outcome either way.
        try await tmux.waitFor("counter", "the dropped connection") {
            $0.contains("? increment: ") && $0.statusConnection?.hasPrefix("reconnecting (attempt ") == true
        }
        daemon = try Daemon(port: port, dataDirectory: data)
        let lost = try await tmux.waitFor("counter", "the press known lost", timeout: .seconds(20)) { $0.contains("✗ increment was not applied") }
        #expect(lost.contains("count: 1") && lost.statusConnection == "live", "\(lost)")
        #expect(!lost.contains("may or may not"), "\(lost)")
    }
}
