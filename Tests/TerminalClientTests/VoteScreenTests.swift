import Testing
import TetherTestSupport

/// `tether vote` under tmux: two terminals (two anonymous connections, so two voters) see the
/// same totals, each sees only their own vote marked, and closing shows everyone's ballots, each
/// voter by the name they joined with.
@Suite("tether vote under tmux", .serialized, .timeLimit(.minutes(3)))
struct VoteScreenTests {
    @Test func eachTerminalMarksOnlyItsOwnVote() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("one", ["--url", daemon.url, "--name", "ana", "vote:lunch"])
        try tmux.startTether("two", ["--url", daemon.url, "--name", "bo", "vote:lunch"])
        for name in ["one", "two"] {
            try await tmux.waitFor(name, "the options and who is here") {
                $0.contains("1  pizza") && $0.contains("3  salad") && $0.statusConnection == "live" && $0.contains("here: ana, bo")
            }
        }
        try tmux.type("one", "1")
        let one = try await tmux.waitFor("one", "my vote marked") { $0.contains("pizza    █ 1  ← your vote") }
        #expect(one.contains("open: one vote per person, secret until the vote closes"), "\(one)")
        var two = try await tmux.waitFor("two", "the total, unmarked") { $0.contains("pizza    █ 1") }
        #expect(!two.contains("your vote"), "the other terminal does not see whose vote it is: \(two)")

        try tmux.type("two", "3")
        two = try await tmux.waitFor("two", "its own vote") { $0.contains("salad    █ 1  ← your vote") }
        #expect(!two.contains("pizza    █ 1  ← your vote"))
        try await tmux.waitFor("one", "the second total") { $0.contains("salad    █ 1") && !$0.contains("salad    █ 1  ←") }

        try tmux.type("one", "c")
        for name in ["one", "two"] {
            try await tmux.waitFor(name, "the ballots, by name") { $0.contains("closed") && $0.contains("ballots: ana → pizza, bo → salad") }
        }
    }
}
