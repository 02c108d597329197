import Foundation
import Testing
import TetherTUI
import TetherTestSupport

/// `tether` on a real terminal (tmux 100×40, UTF-8) against a real `tetherd`, asserting on what
/// the panes show.
@Suite("tether under tmux", .serialized, .timeLimit(.minutes(2)))
struct TmuxTests {
    @Test func aPressInOnePaneShowsInTheOther() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tmux = try Tmux()
        defer { tmux.kill() }
        try tmux.startTether("alice", ["--url", daemon.url, "counter"])
        try tmux.startTether("bob", ["--url", daemon.url, "counter"])
        for pane in ["alice", "bob"] {
            try await tmux.waitFor(pane, "a live counter at 0") { $0.statusConnection == "live" && $0.contains("count: 0") }
        }

        // "-" has the focus when the screen opens; Tab moves it to "+", Enter presses it.
        try tmux.press("alice", "Tab", "Enter")
        let bob = try await tmux.waitFor("bob", "count 1") { $0.contains("count: 1") }
        #expect(bob.statusVersion == 1)
        let alice = try await tmux.waitFor("alice", "count 1 and the action's latency") { $0.contains("count: 1") && $0.contains(" ms") }
        #expect(alice.contains("[ - ]  [ + ]  [ reset ]"))

        // In bob, Enter presses "-", which has the focus.
        try tmux.press("bob", "Enter")
        try await tmux.waitFor("alice", "count 0 after bob's -") { $0.contains("count: 0") && $0.statusVersion == 2 }

        // Keys: + twice in bob.
        try tmux.type("bob", "++")
        try await tmux.waitFor("alice", "count 2") { $0.contains("count: 2") }

        // A resize lays the screen out again at the new size.
        try tmux.run(["resize-window", "-t", "alice", "-x", "60", "-y", "16"])
        let resized = try await tmux.waitFor("alice", "the 60×16 layout") { $0.rows.first?.hasPrefix("┌─ tether · counter ─") == true && $0.rows.first?.hasSuffix("┐") == true && $0.rows.first?.displayWidth == 60 }
        #expect(resized.contains("count: 2") && resized.contains("[ + ]"))
        #expect(resized.rows.filter { !$0.isEmpty }.count == 16)
        #expect(resized.statusConnection == "live")

        // q quits with status 0 and gives the terminal back (the alternate screen is gone).
        try tmux.type("alice", "q")
        #expect(try await tmux.waitForExit("alice") == 0)
        let after = try tmux.capture("alice")
        #expect(!after.contains("count:") && !after.contains("● live"), "the screen was not restored:\n\(after)")
        // Ctrl-C quits too.
        try tmux.press("bob", "C-c")
        #expect(try await tmux.waitForExit("bob") == 0)
    }

    @Test func signInIsEnabledByTheServerAndShowsItsKoreanError() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tmux = try Tmux()
        defer { tmux.kill() }
        try tmux.startTether("login", ["--url", daemon.url, "login"])
        try await tmux.waitFor("login", "the form") {
            $0.statusConnection == "live" && $0.statusVersion == 0 && $0.contains("[ Sign in (disabled) ]")
        }

        // The email alone does not enable the button (the server has applied every keystroke:
        // one setEmail, one version each).
        let email = "me@example.com"
        try tmux.type("login", email)
        var screen = try await tmux.waitFor("login", "the email applied") { $0.statusVersion == email.count && $0.contains("│\(email) ") }
        #expect(screen.contains("[ Sign in (disabled) ]"))

        // Three characters of password: the server's Korean message before any press, drawn
        // aligned inside the box, and the button still disabled (it enabled with one before).
        try tmux.press("login", "Tab")
        try tmux.type("login", "abc")
        let message = "6자리 이상 비밀번호를 입력해주세요."
        screen = try await tmux.waitFor("login", "the Korean message, the password masked") {
            $0.statusVersion == email.count + 3 && $0.contains(message) && $0.contains("│•••  ")
        }
        #expect(screen.contains("[ Sign in (disabled) ]"))
        #expect(!screen.contains("abc"))
        let row = try #require(screen.rows.first { $0.contains(message) })
        #expect(row.hasPrefix("│ ") && row.hasSuffix("│"), "row: \(row)")
        #expect(row.displayWidth == tmux.width, "wide characters take two cells: \(row)")

        // Six characters: enabled, signed in.
        try tmux.type("login", "def")
        screen = try await tmux.waitFor("login", "the button enabled") { $0.contains("[ Sign in ]") && !$0.contains(message) }
        try tmux.press("login", "Tab", "Enter")
        screen = try await tmux.waitFor("login", "the signed-in view") { $0.contains("Signed in as me@example.com") }
        #expect(!screen.contains(message))
        #expect(!screen.contains("Sign in ]"))
    }

    @Test func todoAddsTogglesAndDeletes() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tmux = try Tmux()
        defer { tmux.kill() }
        try tmux.startTether("todo", ["--url", daemon.url, "todo:e2e"])
        try await tmux.waitFor("todo", "an empty list") { $0.statusConnection == "live" && $0.contains("nothing to do") }

        // The input has the focus: type and Enter adds; typing the next can start at once.
        try tmux.type("todo", "milk")
        try tmux.press("todo", "Enter")
        try tmux.type("todo", "김치")
        try tmux.press("todo", "Enter")
        try await tmux.waitFor("todo", "two items") { $0.contains("[ ] milk") && $0.contains("[ ] 김치") && $0.contains("0 of 2 done") }

        // Tab to the list; Enter toggles the selected (first) item, space the next one.
        try tmux.press("todo", "Tab", "Enter")
        try await tmux.waitFor("todo", "milk done") { $0.contains("[x] milk") && $0.contains("1 of 2 done") }
        try tmux.press("todo", "Down", "Space")
        try await tmux.waitFor("todo", "both done") { $0.contains("[x] 김치") && $0.contains("2 of 2 done") }

        // Delete removes the selected item; another client sees the list item by item.
        try tmux.press("todo", "DC")
        try await tmux.waitFor("todo", "김치 removed") { !$0.contains("김치") && $0.contains("1 of 1 done") }
        let sent = try await runTether(["send", "--url", daemon.url, "todo:e2e", "add", #"{"title":"bread"}"#])
        #expect(sent.status == 0)
        try await tmux.waitFor("todo", "bread from elsewhere") { $0.contains("[ ] bread") && $0.contains("1 of 2 done") }
    }

    @Test func calculatorGalleryExchangeAndClockBindAndAct() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tmux = try Tmux()
        defer { tmux.kill() }
        for room in ["calculator", "gallery", "exchange", "clock"] {
            try tmux.startTether(room, ["--url", daemon.url, room])
            try await tmux.waitFor(room, "\(room) live") { $0.statusConnection == "live" && $0.statusVersion != nil }
        }

        // Typed keys press the keypad; = evaluates on the server and adds to the history.
        try tmux.type("calculator", "12+3*2=")
        try await tmux.waitFor("calculator", "the result and its history") { $0.contains("18│") && $0.contains("│12+3*2 = 18 ") }
        #expect(try tmux.capture("calculator").contains("[ 7 ] [ 8 ] [ 9 ] [ / ] [ back ]"))

        // n (or the next button) moves to the next person: name and multi-line picture follow.
        try tmux.type("gallery", "n")
        var screen = try await tmux.waitFor("gallery", "Alan Turing") { $0.contains("Alan Turing") && $0.contains("2 of 3") }
        #expect(screen.contains("| (o o) |"))
        try tmux.press("gallery", "Tab", "Enter")  // the focus moves from previous to next
        screen = try await tmux.waitFor("gallery", "Grace Hopper") { $0.contains("Grace Hopper") }
        #expect(screen.contains("( o.o )"))

        // The result follows the amount as it is typed, with no button.
        try tmux.type("exchange", "2.5")
        try await tmux.waitFor("exchange", "the result") { $0.contains("3375.00") && $0.contains("rate: ") && $0.contains("1350.0") }

        // The clock ticks: the label changes by itself.
        let first = try #require(try tmux.capture("clock").rows.first { $0.contains("server time ") })
        try await tmux.waitFor("clock", "the next second", timeout: .seconds(5)) { $0.rows.contains { $0.contains("server time ") && $0 != first } }
    }

    @Test func theInspectorShowsAnyRoomAndMarksWhatChanged() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tmux = try Tmux()
        defer { tmux.kill() }
        try tmux.startTether("bench", ["--url", daemon.url, "bench:inspect"])
        try await tmux.waitFor("bench", "the empty state") { $0.contains("kind bench · version 0") && $0.contains(#""fields": {}"#) }

        for (key, value) in [("name", #""가나다""#), ("size", "42")] {
            let sent = try await runTether(["send", "--url", daemon.url, "bench:inspect", "set", #"{"key":"\#(key)","value":\#(value)}"#])
            #expect(sent.status == 0, "\(sent.stderr)")
        }
        let screen = try await tmux.waitFor("bench", "both fields, the last one marked") { $0.contains("version 2") && $0.contains(#""size": 42"#) }
        let marked = screen.rows.filter { $0.contains("│» ") }
        #expect(marked.count == 1 && marked[0].contains(#""size": 42"#), "marked rows: \(marked)")
        #expect(screen.rows.contains { $0.contains(#""name": "가나다","#) && !$0.contains("»") })
        #expect(screen.contains("patch v1→v2: add /fields/size"))
    }

    @Test func theScreenShowsReconnectingWhileTheServerIsDown() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tmux = try Tmux()
        defer { tmux.kill() }
        try tmux.startTether("counter", ["--url", daemon.url, "counter"])
        try await tmux.waitFor("counter", "live") { $0.statusConnection == "live" && $0.contains("count: 0") }
        daemon.kill9()
        let screen = try await tmux.waitFor("counter", "reconnecting") { $0.statusConnection?.hasPrefix("reconnecting") == true }
        #expect(screen.contains("reconnecting (attempt ") && screen.contains("connection"), "which attempt, and why: \(screen)")
        // Still responsive: Ctrl-C quits and restores the terminal.
        try tmux.press("counter", "C-c")
        #expect(try await tmux.waitForExit("counter") == 0)
    }

    /// With --headless, the screen is replaced by JSON lines even on a terminal.
    @Test func headlessOnATerminalPrintsJSONLines() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tmux = try Tmux()
        defer { tmux.kill() }
        try tmux.startTether("watch", ["--url", daemon.url, "--headless", "counter"])
        try await tmux.waitFor("watch", "hello and snapshot") { $0.contains(#"{"type":"hello""#) && $0.contains(#""type":"snapshot""#) }
        try tmux.press("watch", "C-c")
        #expect(try await tmux.waitForExit("watch") == 0)
    }
}
