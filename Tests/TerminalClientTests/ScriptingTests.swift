import Synchronization
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

    /// Exit 2 and "not applied" for an error that settles the action; an action whose answer is
    /// lost goes again under its number (once answered, exit 0); exit 3 and "may or may not have
    /// been applied" only when `--timeout` ends the wait with the action sent and unanswered.
    @Test func sendTellsWhetherTheActionWasApplied() async throws {
        let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#
        let drops = Mutex(0)
        let server = try ScriptedServer(greeting: [hello]) { text in
            guard let request = try? JSONParser().parse(text), let id = request["id"]?.intValue else { return [] }
            let error = #"{"type":"error","code":"unavailable","message":"owner lost","id":\#(id),"room":"r","applied":"#
            switch request["name"]?.stringValue {
            case "refuse": return [error + "false}"]
            case "lose": return [error + #""unknown"}"#]
            // Unanswered the first time (the test drops the connection), acked when sent again.
            case "drop" where drops.withLock({ $0 += 1; return $0 }) > 1: return [#"{"type":"ack","id":\#(id),"room":"r","version":4}"#]
            default: return []
            }
        }
        defer { server.stop() }

        let refused = try await runTether(["send", "--url", server.url, "r", "refuse"])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(try jsonLines(refused.stdout).first?["applied"] == false)
        #expect(refused.stderr == "tether: unavailable: owner lost; not applied\n", "\(refused.stderr)")

        // "unknown" is sent again, under the same number, until --timeout.
        let lost = try await runTether(["send", "--url", server.url, "--timeout", "1", "r", "lose"])
        #expect(lost.status == 3, "\(lost.stderr)")
        #expect(lost.stderr == "tether: sent, but no answer within 1.0 seconds; it may or may not have been applied\n", "\(lost.stderr)")
        let loses = server.received.filter { $0.contains(#""name":"lose""#) }
        #expect(loses.count >= 2 && loses.allSatisfy { $0.contains(#""seq":1"#) }, "\(loses)")

        let unanswered = try await runTether(["send", "--url", server.url, "--timeout", "0.5", "r", "ignore"])
        #expect(unanswered.status == 3, "\(unanswered.stderr)")
        #expect(unanswered.stdout.isEmpty)
        #expect(unanswered.stderr.hasSuffix("; it may or may not have been applied\n"), "\(unanswered.stderr)")

        // The connection drops after the action was sent: it goes again, and is answered once.
        async let dropped = runTether(["send", "--url", server.url, "r", "drop"])
        try await eventually("the action reaches the server") { server.received.contains { $0.contains(#""name":"drop""#) } }
        server.dropAll()
        let droppedResult = try await dropped
        #expect(droppedResult.status == 0, "\(droppedResult.stderr)")
        #expect(try jsonLines(droppedResult.stdout).first?["version"] == 4)
        let sends = server.received.filter { $0.contains(#""name":"drop""#) }
        #expect(sends.count == 2 && sends.allSatisfy { $0.contains(#""seq":1"#) }, "\(sends)")
    }

    /// `tether send` waits for a server that is not there yet (up to `--timeout`), and sends once it is.
    @Test func sendWaitsForTheServer() async throws {
        let port = try freePort()
        // An instance of its own: should another test's daemon take the port first, this send
        // lands in a room nobody else reads.
        async let sent = runTether(["send", "--url", "ws://127.0.0.1:\(port)", "--timeout", "20", "counter:waits-for-its-server", "increment"])
        try await Task.sleep(for: .milliseconds(700))  // a few refused attempts first
        let daemon = try Daemon(arguments: ["--memory-only", "--port", "\(port)"])
        defer { daemon.stop() }
        let result = try await sent
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try jsonLines(result.stdout).first?["version"] == 1)
    }

    /// A daemon killed with the connection accepted but not yet answered (stopped, then kill -9)
    /// closes it during the handshake: `send` tries again, as for a refused one, and the
    /// restarted daemon runs the action once.
    @Test func sendWaitsForADaemonThatRestartsMidHandshake() async throws {
        let daemon = try Daemon()
        try daemon.pause()
        let send = try ChildProcess(tetherExecutable, ["send", "--url", daemon.url, "--timeout", "20", "counter:k", "increment", #"{"by":5}"#])
        try await Task.sleep(for: .milliseconds(1500))
        daemon.kill9()
        let restarted = try Daemon(port: daemon.port, dataDirectory: daemon.dataDirectory)
        defer { restarted.stop() }
        let status = try await send.waitForExit(timeout: .seconds(20))
        #expect(status == 0, "\(send.stderr)")
        let watched = try await runTether(["watch", "--url", restarted.url, "--state", "--once", "counter:k"])
        #expect(try jsonLines(watched.stdout).first?["state"] == ["count": 5], "\(watched.stdout) \(watched.stderr)")
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
        let refusing = try RefusingPort()
        let url = refusing.url
        for arguments in [["send", "--url", url, "counter", "increment"], ["watch", "--url", url, "counter"]] {
            let start = ContinuousClock.now
            let result = try await runTether(arguments + ["--timeout", "1"])
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
