import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// `tether watch`, `tether send` and headless `tether ROOM`: what scripts see.
@Suite("tether watch and send", .serialized, .timeLimit(.minutes(2)))
struct ScriptingTests {
    @Test func watchPrintsEveryFrameAndSendActsOnce() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let watch = try ChildProcess(tetherExecutable, ["watch", "--url", daemon.url, "counter"])
        try await watch.waitForOutput("hello and snapshot") { $0.stdoutLines.count >= 2 }
        var frames = try jsonLines(watch.stdout)
        #expect(frames[0]["type"] == "hello" && frames[0]["protocol"] == 1)
        #expect(frames[1]["type"] == "snapshot" && frames[1]["room"] == "counter" && frames[1]["state"] == ["count": 0])

        let sent = try await runTether(["send", "--url", daemon.url, "counter", "increment", #"{"by":2}"#])
        #expect(sent.status == 0, "stderr: \(sent.stderr)")
        let ack = try jsonLines(sent.stdout)
        #expect(ack.count == 1 && ack[0]["type"] == "ack" && ack[0]["version"] == 1 && ack[0]["room"] == "counter")
        #expect(sent.stderr.isEmpty)

        try await watch.waitForOutput("the patch") { $0.stdoutLines.count >= 3 }
        frames = try jsonLines(watch.stdout)
        #expect(frames[2]["type"] == "patch" && frames[2]["from"] == 0 && frames[2]["version"] == 1)
        #expect(frames[2]["ops"] == [["op": "replace", "path": "/count", "value": 2]])

        // SIGINT (or SIGTERM) ends it cleanly.
        watch.signal(SIGINT)
        #expect(try await watch.waitForExit() == 0)
        #expect(watch.stderr.isEmpty, "\(watch.stderr)")
    }

    /// Without tokens, `tether` is one person per account and --name, across runs: five sends
    /// are one vote, and kim is someone else (the ids live in $XDG_STATE_HOME/tether).
    @Test func sendVotesOncePerPerson() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let state = Daemon.temporaryDirectory()
        let environment = ["XDG_STATE_HOME": state]
        for option in ["pizza", "pizza", "salad", "pizza", "pizza"] {
            let vote = try await runTether(["send", "--url", daemon.url, "vote:once", "vote", #"{"option":"\#(option)"}"#], environment: environment)
            #expect(vote.status == 0, "\(vote.stderr)")
        }
        _ = try await runTether(["send", "--url", daemon.url, "--name", "kim", "vote:once", "vote", #"{"option":"salad"}"#], environment: environment)
        let watch = try await runTether(["watch", "--url", daemon.url, "--state", "--once", "vote:once"], environment: environment)
        let state1 = try #require(try jsonLines(watch.stdout).first)
        #expect(state1["state"]?["totals"] == ["pizza": 1, "noodles": 0, "salad": 1], "\(watch.stdout)")
        let users = try JSON(parsing: String(contentsOfFile: state + "/tether/users.json", encoding: .utf8))
        #expect(users.objectValue?.keys.sorted() == ["", "kim"])
    }

    @Test func sendReportsTheServersError() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let unknown = try await runTether(["send", "--url", daemon.url, "counter", "fly"])
        #expect(unknown.status == 2)
        let error = try jsonLines(unknown.stdout)
        #expect(error.count == 1 && error[0]["type"] == "error" && error[0]["code"] == "unknown_action")
        #expect(unknown.stderr.rows.filter { !$0.isEmpty }.count == 1)
        #expect(unknown.stderr.hasPrefix("tether: unknown_action: "))

        let wrongType = try await runTether(["send", "--url", daemon.url, "counter", "increment", #"{"by":"lots"}"#])
        #expect(wrongType.status == 2)
        #expect(try jsonLines(wrongType.stdout).first?["code"] == "invalid_args")
    }

    /// Exit 2 and "not applied" for an error that says so; exit 3 and "may or may not have been
    /// applied" when the outcome is unknown: the server says so, or no answer comes in time.
    @Test func sendTellsWhetherTheActionWasApplied() async throws {
        let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#
        let server = try ScriptedServer(greeting: [hello]) { text in
            guard let request = try? JSONParser().parse(text), let id = request["id"]?.intValue else { return [] }
            let error = #"{"type":"error","code":"unavailable","message":"owner lost","id":\#(id),"room":"r","applied":"#
            switch request["name"]?.stringValue {
            case "refuse": return [error + "false}"]
            case "lose": return [error + #""unknown"}"#]
            default: return []
            }
        }
        defer { server.stop() }

        let refused = try await runTether(["send", "--url", server.url, "r", "refuse"])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(try jsonLines(refused.stdout).first?["applied"] == false)
        #expect(refused.stderr == "tether: unavailable: owner lost; not applied\n", "\(refused.stderr)")

        let lost = try await runTether(["send", "--url", server.url, "r", "lose"])
        #expect(lost.status == 3, "\(lost.stderr)")
        #expect(try jsonLines(lost.stdout).first?["applied"] == "unknown")
        #expect(lost.stderr == "tether: unavailable: owner lost; it may or may not have been applied\n", "\(lost.stderr)")

        let unanswered = try await runTether(["send", "--url", server.url, "--timeout", "0.5", "r", "ignore"])
        #expect(unanswered.status == 3, "\(unanswered.stderr)")
        #expect(unanswered.stdout.isEmpty)
        #expect(unanswered.stderr == "tether: no answer from the server in time; it may or may not have been applied\n", "\(unanswered.stderr)")

        // The connection drops after the action was sent.
        async let dropped = runTether(["send", "--url", server.url, "r", "drop"])
        try await eventually("the action reaches the server") { server.received.contains { $0.contains(#""name":"drop""#) } }
        server.dropAll()
        let droppedResult = try await dropped
        #expect(droppedResult.status == 3, "\(droppedResult.stderr)")
        #expect(droppedResult.stderr.hasPrefix("tether: the connection dropped before the answer: "), "\(droppedResult.stderr)")
        #expect(droppedResult.stderr.hasSuffix("; it may or may not have been applied\n"), "\(droppedResult.stderr)")
    }

    @Test func badJSONArgumentsAreRefusedBeforeConnecting() async throws {
        let port = try freePort()
        for args in [#"{"by":"#, "[1]", "2"] {
            let result = try await runTether(["send", "--url", "ws://127.0.0.1:\(port)", "counter", "increment", args])
            #expect(result.status == 64, "\(args): \(result.stderr)")
            #expect(result.stderr.contains("JSON-ARGS"))
            #expect(result.stdout.isEmpty)
        }
        let unknownOption = try await runTether(["send", "--frobnicate", "counter", "increment"])
        #expect(unknownOption.status == 64)
        #expect(unknownOption.stderr.contains("Usage: tether send"))
    }

    @Test func noServerMeansOneLineAndAFailureStatus() async throws {
        let url = "ws://127.0.0.1:\(try freePort())"
        for arguments in [["send", "--url", url, "counter", "increment"], ["watch", "--url", url, "counter"]] {
            let start = ContinuousClock.now
            let result = try await runTether(arguments)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            let lines = result.stderr.rows.filter { !$0.isEmpty }
            #expect(lines.count == 1 && lines[0].hasPrefix("tether: cannot connect to \(url)"), "\(lines)")
            #expect(ContinuousClock.now - start < .seconds(8), "no retrying for scripts")
        }
        let badURL = try await runTether(["watch", "--url", "http://127.0.0.1:1", "counter"])
        #expect(badURL.status == 1)
        #expect(badURL.stderr.contains("unsupported scheme"))
        #expect(badURL.stderr.rows.filter { !$0.isEmpty }.count == 1)
    }

    @Test func watchExitsWhenTheJoinIsRefusedOrTheServerGoesAway() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let refused = try await runTether(["watch", "--url", daemon.url, "nosuchkind"])
        #expect(refused.status == 2)
        #expect(try jsonLines(refused.stdout).map { $0["type"] } == ["hello", "error"])
        #expect(refused.stderr.hasPrefix("tether: cannot join nosuchkind: unknown_room"))

        let watch = try ChildProcess(tetherExecutable, ["watch", "--url", daemon.url, "clock"])
        try await watch.waitForOutput("the snapshot") { $0.stdoutLines.count >= 2 }
        daemon.stop()
        #expect(try await watch.waitForExit() == 1)
        #expect(watch.stderrLines.count == 1 && watch.stderr.contains("connection lost"), "\(watch.stderr)")
    }

    /// `tether ROOM` with stdout not a terminal behaves like `watch`.
    @Test func withoutATerminalTheClientPrintsJSONLines() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try ChildProcess(tetherExecutable, ["--url", daemon.url, "gallery"])
        try await client.waitForOutput("hello and snapshot") { $0.stdoutLines.count >= 2 }
        let frames = try jsonLines(client.stdout)
        #expect(frames[1]["type"] == "snapshot" && frames[1]["state"]?["name"] == "Ada Lovelace")
        client.signal(SIGTERM)
        #expect(try await client.waitForExit() == 0)
    }
}
