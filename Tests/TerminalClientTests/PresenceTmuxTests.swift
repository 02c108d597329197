import Foundation
import Testing
import TetherTestSupport

/// `tether --name` under tmux against a real tetherd: who is here, and who edits what.
@Suite("tether --name under tmux", .serialized, .timeLimit(.minutes(2)))
struct PresenceTmuxTests {
    @Test func namedClientsSeeEachOtherAndTheItemBeingRenamed() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tmux = try Tmux()
        defer { tmux.kill() }
        try tmux.startTether("kim", ["--url", daemon.url, "--name", "kim", "todo:here"])
        try tmux.startTether("lee", ["--url", daemon.url, "--name", "lee", "todo:here"])
        try tmux.startTether("counter", ["--url", daemon.url, "--name", "kim", "counter"])
        for pane in ["kim", "lee"] {
            try await tmux.waitFor(pane, "both names") { $0.statusConnection == "live" && $0.contains("here: kim, lee") }
        }
        try await tmux.waitFor("counter", "the counter's own list") { $0.contains("count: 0") && $0.contains("here: kim") && !$0.contains("lee") }

        let sent = try await runTether(["send", "--url", daemon.url, "todo:here", "add", #"{"title":"milk"}"#])
        #expect(sent.status == 0)
        try await tmux.waitFor("lee", "the item") { $0.contains("[ ] milk") }

        // lee starts renaming milk: kim sees it marked; lee's own screen does not mark it.
        try tmux.press("lee", "Tab")
        try tmux.type("lee", "e")
        let lee = try await tmux.waitFor("lee", "renaming") { $0.contains("Rename \"milk\"") }
        #expect(!lee.contains("is editing"))
        try await tmux.waitFor("kim", "lee editing milk") { $0.contains("[ ] milk  (lee is editing)") }
        try tmux.press("lee", "Escape")
        try await tmux.waitFor("kim", "the mark gone") { $0.contains("[ ] milk") && !$0.contains("is editing") }

        // lee quits: kim sees him leave.
        try tmux.press("lee", "C-c")
        #expect(try await tmux.waitForExit("lee") == 0)
        try await tmux.waitFor("kim", "only kim") { $0.contains("here: kim") && !$0.contains("lee") }
    }
}
