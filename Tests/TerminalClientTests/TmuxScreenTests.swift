import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
import TetherTUI
import TetherTestSupport

/// The screens as a user meets them on a real terminal: list selection while others edit,
/// the calculator's keys, a press while the server is down, small windows, an unknown room, and
/// the inspector.
@Suite("tether screens under tmux", .serialized, .timeLimit(.minutes(3)))
struct TmuxScreenTests {
    @Test func theTodoSelectionStaysOnItsItemWhenAnotherClientRemovesOneAbove() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        for title in ["A", "B", "C", "D"] {
            #expect(try await runTether(["send", "--url", daemon.url, "todo:sel", "add", #"{"title":"\#(title)"}"#]).status == 0)
        }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("todo", ["--url", daemon.url, "todo:sel"])
        try await tmux.waitFor("todo", "four items") { $0.contains("[ ] D") && $0.statusConnection == "live" }
        try tmux.press("todo", "Tab", "Down", "Down")  // the list, then C

        // Another client removes A (t1): C moves up a row, and stays selected.
        #expect(try await runTether(["send", "--url", daemon.url, "todo:sel", "remove", #"{"id":"t1"}"#]).status == 0)
        try await tmux.waitFor("todo", "A gone") { !$0.contains("[ ] A") }
        try tmux.press("todo", "Space")
        var screen = try await tmux.waitFor("todo", "C toggled") { $0.contains("1 of 3 done") }
        #expect(screen.contains("[x] C") && screen.contains("[ ] D"), "\(screen)")

        // The selected C removed elsewhere: its neighbour D is selected; Delete removes D.
        #expect(try await runTether(["send", "--url", daemon.url, "todo:sel", "remove", #"{"id":"t3"}"#]).status == 0)
        try await tmux.waitFor("todo", "C gone") { !$0.contains("] C") }
        try tmux.press("todo", "DC")
        screen = try await tmux.waitFor("todo", "D removed") { !$0.contains("] D") }
        #expect(screen.contains("[ ] B"))
    }

    @Test func theCalculatorStartsANewNumberAfterEqualsAndArrowsMoveOnTheKeypad() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("calc", ["--url", daemon.url, "calculator"])
        try await tmux.waitFor("calc", "the keypad") { $0.contains("[ % mod ]") && $0.statusConnection == "live" }
        try tmux.type("calc", "1+1=")
        try await tmux.waitFor("calc", "2") { $0.contains("│1+1 = 2 ") && $0.contains(" 2│") }
        try tmux.type("calc", "5")
        try await tmux.waitFor("calc", "a new number, 5") { $0.contains(" 5│") }
        #expect(!(try tmux.capture("calc")).contains(" 25│"))
        // An operator after = goes on from the result.
        try tmux.type("calc", "=*3=")  // "5=" is an expression of its own: 5
        try await tmux.waitFor("calc", "5*3") { $0.contains("│5*3 = 15 ") }

        // The focus starts on 7: Down, Right is 5; Enter presses it (a new number again).
        try tmux.press("calc", "Down", "Right", "Enter")
        try await tmux.waitFor("calc", "5 pressed by arrows") { $0.contains(" 5│") }
        #expect(try tmux.capture("calc").rows.last(where: { $0.contains("arrows move on the keypad") }) != nil)
    }

    /// Email, Tab, password, Tab, Enter in one burst (a paste, a fast typist far from the
    /// server) signs in: the fields predict the Sign-in button's state, so Tab reaches it enabled
    /// before any answer, and the actions reach the room in order.
    @Test func theLoginBurstSignsIn() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("login", ["--url", daemon.url, "login"])
        try await tmux.waitFor("login", "the form") { $0.statusConnection == "live" && $0.contains("Sign in (disabled)") }
        // A stopped daemon stands for a slow one: no answer comes during the burst.
        try daemon.pause()
        try tmux.press("login", "ada@example.com", "Tab", "secret1", "Tab", "Enter")
        try await tmux.waitFor("login", "the presses waiting") { $0.contains("presses waiting for the server") }
        daemon.resume()
        let signedIn = try await tmux.waitFor("login", "signed in") { $0.contains("Signed in as ada@example.com") }
        #expect(!signedIn.contains("✗"), "\(signedIn)")
    }

    /// A press while the daemon is down waits in the client's queue, says so, and counts once
    /// the daemon is back.
    @Test func aPressWhileTheServerIsDownWaitsAndCountsWhenItIsBack() async throws {
        let port = try freePort()
        let data = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        var daemon = try Daemon(port: port, dataDirectory: data)
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("counter", ["--url", daemon.url, "--timeout", "60", "counter"])
        try await tmux.waitFor("counter", "live") { $0.statusConnection == "live" && $0.contains("count: 0") }
        daemon.kill9()
        try await tmux.waitFor("counter", "reconnecting") { $0.statusConnection?.hasPrefix("reconnecting") == true }
        try tmux.type("counter", "+")
        let down = try await tmux.waitFor("counter", "the waiting line") {
            $0.contains("1 press waiting for the server: sent when the connection is back")
        }
        #expect(down.statusConnection?.hasPrefix("reconnecting") == true)

        daemon = try Daemon(port: port, dataDirectory: data)
        let back = try await tmux.waitFor("counter", "live again, the press counted", timeout: .seconds(15)) {
            $0.statusConnection == "live" && $0.contains("count: 1") && $0.statusVersion == 1
        }
        #expect(!back.contains("waiting for the server") && !back.contains("not sent"), "\(back)")
        let status = try #require(back.rows.last { $0.hasPrefix("● ") })
        #expect(status.hasPrefix("● live │ room counter │ v1"), "\(status)")
    }

    @Test func everyScreenStaysUsableAt80x24AndDegradesAt40x12() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        // What each screen must still show, beside its status bar and a way to quit.
        let essentials: [(room: String, small: [String])] = [
            ("counter", ["count: 0", "[ + ]"]),
            ("clock", ["server time "]),
            ("login", ["Email", "Password", "[ Sign in (disabled) ]"]),
            ("exchange", ["Amount", "Set the rate"]),
            ("calculator", ["Display", "[ 0 ] [ . ] [ = ] [ + ]", "History"]),
            ("gallery", ["Ada Lovelace", "[ next > ]"]),
            ("todo", ["To-dos", "nothing to do"]),
            ("vote", ["Where do we eat?", "1  pizza", "3  salad"]),
            ("bench:small", ["kind bench", "Send an action"]),
        ]
        for (width, height) in [(80, 24), (80, 12), (40, 12)] {
            let tmux = try Tmux(width: width, height: height)
            defer { tmux.kill() }
            for (room, small) in essentials {
                let name = room.replacingOccurrences(of: ":", with: "-") + "-\(height)"
                try tmux.startTether(name, ["--url", daemon.url, room])
                let screen = try await tmux.waitFor(name, "\(room) at \(width)×\(height)") { screen in
                    screen.statusConnection == "live" && small.allSatisfy { screen.contains($0) }
                }
                let statusRow = try #require(screen.rows.lastIndex { $0.hasPrefix("● ") })
                let hints = screen.rows[statusRow - 1]
                #expect(hints.hasSuffix("q quit") || hints.hasSuffix("Ctrl-C quit"), "\(room) \(width)×\(height): \(hints)")
                #expect(!hints.contains("…"), "hints give way whole: \(hints)")
                #expect(screen.rows.allSatisfy { $0.displayWidth <= width })
                try tmux.press(name, "C-c")  // the pane stays (remain-on-exit), so the server does too
                #expect(try await tmux.waitForExit(name) == 0)
            }
        }
    }

    @Test func anUnknownRoomShowsTheErrorAndTheKinds() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("nope", ["--url", daemon.url, "whatever"])
        let screen = try await tmux.waitFor("nope", "the refusal") { $0.contains("unknown_room") && $0.statusConnection == "not joined" }
        #expect(screen.contains("Cannot open the room \"whatever\"."))
        #expect(screen.contains("kinds are") && screen.contains("calculator") && screen.contains("todo"))
        try tmux.type("nope", "q")
        #expect(try await tmux.waitForExit("nope") == 0)
    }

    @Test func theInspectorOpensForADemoRoomAndSendsAnAction() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("inspect", ["inspect", "--url", daemon.url, "counter"])
        try await tmux.waitFor("inspect", "the state") { $0.contains("kind counter · version 0") && $0.contains(#""count": 0"#) }
        try tmux.type("inspect", #"increment {"by": 2}"#)
        try tmux.press("inspect", "Enter")
        let screen = try await tmux.waitFor("inspect", "the ack") { $0.contains("✓ increment acknowledged at v1") }
        #expect(screen.contains(#""count": 2"#))
        #expect(screen.contains("patch v0→v1: replace /count"))
    }

    /// `--history`: who made the last versions, under the state, kept current as actions come;
    /// a token without the admin claim is told what it needs.
    @Test func theInspectorsHistoryListsWhoMadeEachVersionLive() async throws {
        let secret = "inspect-history"
        func token(_ subject: String, admin: Bool = false) throws -> String {
            let made = try Daemon.runToExit(["token", "--secret", secret, "--subject", subject, "--rooms", "*", "--ttl", "600"] + (admin ? ["--admin"] : []))
            return made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let data = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let daemon = try Daemon(arguments: ["--auth-secret", secret], dataDirectory: data)
        defer { daemon.stop() }
        let send = { (subject: String, title: String) throws in
            let sent = try runProgram(Daemon.executable("tether"), ["send", "--url", daemon.url, "--token", try token(subject), "todo:pane", "add", #"{"title": "\#(title)"}"#])
            #expect(sent.status == 0, "\(sent.stderr)")
        }
        try send("alice", "milk")
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("inspect", ["inspect", "--history", "--url", daemon.url, "--token", try token("ops", admin: true), "todo:pane"])
        try await tmux.waitFor("inspect", "the first version and who made it") { $0.contains("History") && $0.contains(#"alice  add {"title":"milk"}"#) }
        try send("bob", "bread")
        let screen = try await tmux.waitFor("inspect", "the new version, live") { $0.contains(#"bob  add {"title":"bread"}"#) }
        #expect(screen.range(of: "v2  ")!.lowerBound < screen.range(of: "v1  ")!.lowerBound, "newest first:\n\(screen)")

        try tmux.startTether("bob", ["inspect", "--history", "--url", daemon.url, "--token", try token("bob"), "todo:pane"])
        try await tmux.waitFor("bob", "what the history needs") { $0.contains("the history needs a token with the admin claim") }
    }

    /// Issue 34: with two members present the State box was one line (`{`) at 80×24 and at
    /// 40×12; todo's Actions list lost `toggle`; a sent command stayed in the line, so the next was
    /// appended; invalid JSON showed beside a stale "✓ … acknowledged".
    @Test func theInspectorKeepsTheStateAndEveryActionInViewAndClearsItsLine() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        for (width, height) in [(80, 24), (40, 12)] {
            let tmux = try Tmux(width: width, height: height)
            defer { tmux.kill() }
            let room = "todo:inspect\(width)"
            try tmux.startTether("kim", ["--url", daemon.url, "--name", "kim", room])
            try tmux.startTether("inspect", ["inspect", "--url", daemon.url, "--name", "lee", room])
            // At 40×12 the members give way to the state.
            try await tmux.waitFor("inspect", "the room, with its two members where they fit") {
                $0.contains("version 0") && (width < 80 || $0.contains(#"{"name":"kim"}"#) && $0.contains(#"{"name":"lee"}"#))
            }
            try tmux.type("inspect", #"add {"title": "milk"}"#)
            try tmux.press("inspect", "Enter")
            var screen = try await tmux.waitFor("inspect", "the ack") { $0.contains("acknowledged at v1") }
            #expect(!screen.contains(#"add {"title""#), "the line is cleared after a send:\n\(screen)")
            // More than the first line (`{`): the whole item at 80×24, 3 lines at 40×12.
            screen = try await tmux.waitFor("inspect", "the state") {
                $0.contains(#""items": ["#) && (width < 80 || $0.contains(#""title": "milk""#))
            }
            if width >= 80 {
                for action in ["add", "toggle", "rename", "remove", "clearCompleted"] {
                    #expect(screen.contains(action), "\(action) listed:\n\(screen)")
                }
            }
            try tmux.type("inspect", #"add {"#)
            try tmux.press("inspect", "Enter")
            screen = try await tmux.waitFor("inspect", "the problem") { $0.contains("JSON object") }
            #expect(!screen.contains("acknowledged"), "no stale ack beside the problem:\n\(screen)")
        }
    }

    /// Issue 34: after `tether rooms delete`, the to-do screen's key line still offered "Enter
    /// presses the button · e renames · Delete removes", and the server's message showed twice.
    @Test func aDeletedRoomOffersNoKeysAndSaysItOnce() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let tmux = try Tmux(width: 80, height: 24)
        defer { tmux.kill() }
        try tmux.startTether("todo", ["--url", daemon.url, "todo:gone"])
        try await tmux.waitFor("todo", "the screen") { $0.statusConnection == "live" }
        try tmux.type("todo", "milk")
        try tmux.press("todo", "Enter")
        try await tmux.waitFor("todo", "the item") { $0.contains("[ ] milk") }
        try tmux.press("todo", "Tab", "Tab")  // onto the buttons
        try await tmux.waitFor("todo", "the buttons' keys") { $0.contains("Enter presses the button") }
        let deleted = try await runTether(["rooms", "delete", "--url", daemon.url, "todo:gone"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let screen = try await tmux.waitFor("todo", "the deletion") { $0.contains("was deleted") }
        try await Task.sleep(for: .milliseconds(300))  // anything still to come
        let after = try tmux.capture("todo")
        for key in ["Enter presses the button", "e renames", "Delete removes", "Tab focus"] {
            #expect(!after.contains(key), "\(key) offered after the deletion:\n\(after)")
        }
        for said in ["was deleted", "new, empty room"] {
            #expect(after.components(separatedBy: said).count - 1 == 1, "\"\(said)\" once:\n\(after)")
        }
        _ = screen
    }

    /// Issue 34: at 40×12 the to-do's last button read `[ Cle…`, and the vote dropped its "here:"
    /// line and read "secret until…"; at 80 columns the reason for reconnecting was cut
    /// ("(connection refused or host …").
    @Test func smallTerminalsKeepTheLastButtonWhoIsHereAndTheReason() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { _ = daemon.stop() }
        let small = try Tmux(width: 40, height: 12)
        defer { small.kill() }
        try small.startTether("todo", ["--url", daemon.url, "--name", "ann", "todo"])
        try small.startTether("vote", ["--url", daemon.url, "--name", "bo", "vote"])
        let todo = try await small.waitFor("todo", "the to-do screen") { $0.statusConnection == "live" && $0.contains("here:") }
        let buttons = todo.rows.first { $0.contains("Toggle") } ?? ""
        #expect(buttons.contains("Clear") && !buttons.contains("…"), "every button whole: \(buttons)\n\(todo)")
        let vote = try await small.waitFor("vote", "the vote screen") { $0.statusConnection == "live" && $0.contains("pizza") }
        #expect(vote.contains("here: bo"), "who is here:\n\(vote)")
        #expect(vote.contains("the vote closes") && !vote.contains("until…"), "the whole sentence:\n\(vote)")

        let wide = try Tmux(width: 80, height: 24)
        defer { wide.kill() }
        try wide.startTether("counter", ["--url", daemon.url, "counter"])
        try await wide.waitFor("counter", "the counter") { $0.statusConnection == "live" }
        _ = daemon.stop()
        let screen = try await wide.waitFor("counter", "a failed reconnect", timeout: .seconds(20)) { $0.contains("reconnecting (attempt 2") }
        // On two rows of its own if need be.
        let reason = screen.rows.filter { !$0.isEmpty }.suffix(2).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(reason.contains("(connection refused or host unreachable)"), "the whole reason:\n\(screen)")
    }
}
