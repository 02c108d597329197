import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// What scripts get from `tether`: states and limits in `watch`, resuming with `--since`,
/// several rooms, settings from the environment, refused joins, and room discovery.
@Suite("tether command line", .serialized, .timeLimit(.minutes(2)))
struct CommandLineTests {
    @Test func watchHelpNamesTheExitStatusOfARefusedJoin() async throws {
        let help = try await runTether(["watch", "--help"])
        #expect(help.status == 0)
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("with status 2 when the server refuses to join a room"), "\(help.stdout)")
        #expect(!text.contains("status 1 and a one-line error on stderr when the server cannot be reached, refuses the WebSocket handshake, the URL is invalid, no hello arrives within --timeout, or the join is refused"))
    }

    @Test func watchStatePrintsTheRebuiltStateOfSeveralRoomsAndStops() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        #expect(try await runTether(["send", "--url", daemon.url, "counter", "increment", #"{"by":5}"#]).status == 0)

        // --once: each room's current state, one line each, then exit 0.
        let once = try await runTether(["watch", "--url", daemon.url, "--state", "--once", "counter", "gallery"])
        #expect(once.status == 0, "\(once.stderr)")
        let states = try jsonLines(once.stdout)
        #expect(states.count == 2)
        #expect(Set(states.compactMap { $0["room"]?.stringValue }) == ["counter", "gallery"])
        let counter = try #require(states.first { $0["room"] == "counter" })
        #expect(counter["state"] == ["count": 5] && counter["version"] == 1 && counter["epoch"]?.stringValue != nil)

        // --count N with --state: the state after each change, as changes come.
        let watch = try ChildProcess(tetherExecutable, ["watch", "--url", daemon.url, "--state", "--count", "3", "counter"])
        try await watch.waitForOutput("the first state") { $0.stdoutLines.count >= 1 }
        for _ in 0..<2 { #expect(try await runTether(["send", "--url", daemon.url, "counter", "increment"]).status == 0) }
        #expect(try await watch.waitForExit() == 0)
        #expect(try jsonLines(watch.stdout).map { $0["state"]?["count"] } == [5, 6, 7])

        // --count N without --state: frames; the hello is printed but not counted.
        let frames = try await runTether(["watch", "--url", daemon.url, "--count", "1", "counter"])
        #expect(frames.status == 0)
        #expect(try jsonLines(frames.stdout).map { $0["type"] } == ["hello", "snapshot"])
    }

    @Test func watchSinceResumesAfterAGivenVersion() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let first = try jsonLines(try await runTether(["watch", "--url", daemon.url, "--state", "--once", "counter"]).stdout)
        let epoch = try #require(first.first?["epoch"]?.stringValue)
        for _ in 0..<2 { #expect(try await runTether(["send", "--url", daemon.url, "counter", "increment"]).status == 0) }

        let resumed = try await runTether(["watch", "--url", daemon.url, "--since", "\(epoch):0", "--count", "1", "counter"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let lines = try jsonLines(resumed.stdout)
        #expect(lines.map { $0["type"] } == ["hello", "patch"], "the patches after version 0, no snapshot")
        #expect(lines.last?["from"] == 0 && lines.last?["version"] == 2)

        // An epoch the server does not know: a snapshot instead.
        let unknown = try await runTether(["watch", "--url", daemon.url, "--since", "nope:1", "--count", "1", "counter"])
        #expect(try jsonLines(unknown.stdout).last?["type"] == "snapshot")

        for bad in [["--since", "17", "counter"], ["--since", "e:1", "counter", "clock"], ["--since", "e:1", "--state", "counter"], ["--count", "0", "counter"]] {
            let result = try await runTether(["watch", "--url", daemon.url] + bad)
            #expect(result.status == 64, "\(bad): \(result.stderr)")
        }
    }

    @Test func aRefusedJoinAmongSeveralRoomsExits2() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let result = try await runTether(["watch", "--url", daemon.url, "--state", "counter", "nosuchkind"])
        #expect(result.status == 2)
        #expect(try jsonLines(result.stdout).contains { $0["type"] == "error" && $0["code"] == "unknown_room" })
        #expect(result.stderr.hasPrefix("tether: cannot join nosuchkind: unknown_room"))
    }

    @Test func theEnvironmentGivesTheURLAndTheTokenAndFlagsWin() async throws {
        let daemon = try Daemon(arguments: ["--memory-only", "--auth-secret", "s3cret"])
        defer { daemon.stop() }
        let counterToken = try tetherdToken(rooms: "counter")
        let refusing = try RefusingPort()
        let dead = refusing.url

        let fromEnvironment = try await runTether(["send", "counter", "increment"], environment: ["TETHER_URL": daemon.url, "TETHER_TOKEN": counterToken])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        let flagWins = try await runTether(["send", "--url", daemon.url, "counter", "increment"], environment: ["TETHER_URL": dead, "TETHER_TOKEN": counterToken])
        #expect(flagWins.status == 0, "\(flagWins.stderr)")
        let envOnly = try await runTether(["send", "counter", "increment"], environment: ["TETHER_URL": dead])
        #expect(envOnly.status == 1 && envOnly.stderr.contains("cannot connect to \(dead)"))

        // --token-file, and a token on the command line beating the environment's.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tether-token-\(UUID().uuidString)").path
        try (counterToken + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let fromFile = try await runTether(["send", "--url", daemon.url, "--token-file", file, "counter", "increment"])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        let flagToken = try await runTether(["send", "--url", daemon.url, "--token", counterToken, "counter", "increment"], environment: ["TETHER_TOKEN": "not-a-token"])
        #expect(flagToken.status == 0, "\(flagToken.stderr)")
        let missingFile = try await runTether(["send", "--url", daemon.url, "--token-file", file + ".missing", "counter", "increment"])
        #expect(missingFile.status == 64 && missingFile.stderr.contains("cannot read the token file"))
        let both = try await runTether(["watch", "--url", daemon.url, "--token", "x", "--token-file", file, "counter"])
        #expect(both.status == 64)
        let state = try jsonLines(try await runTether(["watch", "--url", daemon.url, "--token-file", file, "--state", "--once", "counter"]).stdout)
        #expect(state.first?["state"] == ["count": 4])
    }

    /// A refusal for want of a token says how a terminal user gives one; an expiry says when.
    @Test func authRefusalsSayHowToGiveAToken() async throws {
        // No leeway: the token below expires for the daemon a second after it is made.
        let daemon = try Daemon(arguments: ["--memory-only", "--auth-secret", "s3cret", "--token-leeway", "0"])
        defer { daemon.stop() }
        for command in [["send", "counter", "increment"], ["watch", "counter"]] {
            let run = try await runTether([command[0], "--url", daemon.url] + command.dropFirst())
            #expect(run.status == 2 && run.stderr.contains("--token-file FILE or $TETHER_TOKEN") && run.stderr.contains("tetherd token"),
                    "\(command): \(run.stderr)")
        }
        let result = try Daemon.runToExit(["token", "--secret", "s3cret", "--rooms", "counter", "--ttl", "1"])
        try await Task.sleep(for: .milliseconds(2100))
        let expired = try await runTether(["send", "--url", daemon.url, "--token", result.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
                                           "counter", "increment"])
        #expect(expired.status == 2 && expired.stderr.contains("Z (") && expired.stderr.contains("s ago)")
                && expired.stderr.contains("--token-file FILE or $TETHER_TOKEN") && !expired.stderr.contains("1970"), "\(expired.stderr)")
    }

    @Test func sendPrintsTheErrorFrameOfARefusedJoin() async throws {
        let daemon = try Daemon(arguments: ["--memory-only", "--auth-secret", "s3cret"])
        defer { daemon.stop() }
        let token = try tetherdToken(rooms: "counter")
        let refused = try await runTether(["send", "--url", daemon.url, "--token", token, "todo", "add", #"{"title":"x"}"#])
        #expect(refused.status == 2)
        let frames = try jsonLines(refused.stdout)
        #expect(frames.count == 1 && frames[0]["type"] == "error" && frames[0]["code"] == "unauthorized" && frames[0]["room"] == "todo", "\(refused.stdout)")
        #expect(refused.stderr.hasPrefix("tether: cannot join todo: unauthorized"))
    }

    @Test func kindsAndDescribeShowWhatTheRoomsDo() async throws {
        let server = try describingServer()
        defer { server.stop() }
        let kinds = try await runTether(["kinds", "--url", server.url])
        #expect(kinds.status == 0, "\(kinds.stderr)")
        #expect(kinds.stdout.rows.filter { !$0.isEmpty } == [
            "counter  shared      increment, reset",
            "login    perSession  setEmail, signIn",
        ])

        let login = try await runTether(["describe", "--url", server.url, "login"])
        #expect(login.status == 0)
        #expect(login.stdout.rows.filter { !$0.isEmpty } == [
            "login (perSession)",
            "  setEmail  value: string",
            "  signIn    (no arguments)",
        ])
        let counter = try await runTether(["describe", "--url", server.url, "counter:other"])
        #expect(counter.stdout.contains("  increment  by: integer (optional)"), "an instance name describes its kind")

        let json = try await runTether(["describe", "--url", server.url, "--json", "login"])
        #expect(try jsonLines(json.stdout).first?["type"] == "description")

        let unknown = try await runTether(["describe", "--url", server.url, "nope"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.hasPrefix("tether: unknown_room: no room kind \"nope\""))
    }

    @Test func describeOnAServerThatDoesNotKnowItSaysSo() async throws {
        let server = try ScriptedServer(greeting: [hello]) { text in
            guard let id = (try? JSONParser().parse(text))?["id"]?.intValue else { return [] }
            return [#"{"type":"error","code":"bad_message","message":"unknown message type \"describe\"","id":\#(id),"applied":false}"#]
        }
        defer { server.stop() }
        let result = try await runTether(["kinds", "--url", server.url])
        #expect(result.status == 2)
        #expect(result.stderr.contains("this server does not answer `describe`"))
    }

    @Test func connectionErrorsSayWhatToTry() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let wss = try await runTether(["watch", "--url", "wss://127.0.0.1:\(daemon.port)", "--insecure", "counter"])
        #expect(wss.status == 1)
        #expect(wss.stderr.contains("the server probably does not use TLS") && wss.stderr.contains("try ws://127.0.0.1:\(daemon.port)/"), "\(wss.stderr)")
        let host = try await runTether(["send", "--url", "ws://no-such-host.invalid:8080", "counter", "increment"])
        #expect(host.status == 1 && host.stderr.contains("cannot resolve the host name \"no-such-host.invalid\""), "\(host.stderr)")
        #expect(host.stderr.rows.filter { !$0.isEmpty }.count == 1)
        // ws:// to a TLS server: `send` tries again (a restarting server closes the same way),
        // then says both.
        let tls = try RoomsCommandTests.certificate()
        let secure = try Daemon(arguments: ["--memory-only", "--tls-cert", tls.cert, "--tls-key", tls.key])
        defer { secure.stop() }
        let plain = try await runTether(["send", "--url", "ws://127.0.0.1:\(secure.port)", "--timeout", "1", "counter", "increment"])
        #expect(plain.status == 1 && plain.stderr.contains("try wss://127.0.0.1:\(secure.port)/") && plain.stderr.contains("restarting"), "\(plain.stderr)")
    }

    /// Connection options work before the subcommand as well as after it; a value that happens to
    /// be a subcommand's name stays a value.
    @Test func globalOptionsGoBeforeOrAfterTheSubcommand() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let before = try await runTether(["--url", daemon.url, "--timeout", "5", "send", "counter", "increment"])
        #expect(before.status == 0, "\(before.stderr)")
        let mixed = try await runTether(["--name", "kim", "watch", "--url", daemon.url, "--state", "--once", "counter"])
        #expect(mixed.status == 0, "\(mixed.stderr)")
        #expect(try jsonLines(mixed.stdout).first?["state"] == ["count": 1])
        let kinds = try await runTether(["--url", daemon.url, "kinds"])
        #expect(kinds.status == 0 && kinds.stdout.contains("counter"), "\(kinds.stderr)")
        // `--name send`: a name, then the default subcommand's room.
        let named = try ChildProcess(tetherExecutable, ["--name", "send", "--url", daemon.url, "--headless", "counter"])
        try await named.waitForOutput("the counter's snapshot") { $0.stdout.contains(#""type":"snapshot""#) }
        named.signal(SIGTERM)
        // A mistake in a leading option is reported as such.
        let bad = try await runTether(["--timeout", "0", "kinds"])
        #expect(bad.status == 64 && bad.stderr.contains("--timeout must be a positive number"), "\(bad.stderr)")
    }

    /// A negative --timeout gets the same message however it is written ("-1" is a value, not a flag).
    @Test func aNegativeTimeoutIsRefusedAsSuch() async throws {
        for arguments in [["send", "--timeout", "-1", "counter", "increment"], ["send", "--timeout=-1", "counter", "increment"],
                          ["--timeout", "-1", "kinds"]] {
            let run = try await runTether(arguments)
            #expect(run.status == 64 && run.stderr.contains("--timeout must be a positive number"), "\(arguments): \(run.stderr)")
        }
    }

    /// `open --help` says what happens to a press while disconnected: it is queued (docs/CLIENTS.md).
    @Test func openHelpSaysAPressWhileDisconnectedIsQueued() async throws {
        let help = try await runTether(["open", "--help"])
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("queued and sent when the connection is back") && !text.contains("nor queued"), "\(help.stdout)")
    }

    /// Every help text fits 80 columns, so no terminal breaks a flag in two.
    @Test func helpTextsFitEightyColumns() async throws {
        for command in [[], ["open"], ["inspect"], ["watch"], ["send"], ["kinds"], ["describe"], ["codegen"], ["codegen", "typescript"],
                        ["webhooks"], ["webhooks", "retry"], ["webhooks", "test"], ["history"], ["show"], ["diff"], ["export"], ["fork"]] {
            let help = try await runTether(command + ["--help"], environment: ["COLUMNS": "80"])
            #expect(help.status == 0)
            for line in help.stdout.rows {
                #expect(line.count <= 80, "tether \(command.joined()) --help: \(line.count) columns: \(line)")
            }
        }
    }

    /// The manual page is the help as the program wraps it for man's width: no sentence is
    /// broken a second time ("…a tetherd room, / and / commands for scripts.").
    @Test func theManPageBreaksNoSentenceTwice() throws {
        let page = try runProgram(URL(fileURLWithPath: "/bin/bash"), [
            Repository.root.appendingPathComponent("Scripts/manpage.sh").path, tetherExecutable.path, "1", "Tether terminal client", "0.1.0",
        ])
        #expect(page.status == 0, "\(page.stderr)")
        let text = page.stdout.rows
        let start = try #require(text.firstIndex(of: ".nf")) + 1
        let end = try #require(text.firstIndex { $0.hasPrefix("USAGE:") })
        let prose = Array(text[start..<end])
        #expect(prose.count > 5)
        for (line, next) in zip(prose, prose.dropFirst()) where !line.isEmpty && !next.isEmpty {
            let word = next.prefix { $0 != " " }
            // ArgumentParser keeps lines under COLUMNS (76): a break is early when the next word fit.
            #expect(line.trimmingCharacters(in: .whitespaces).count + 1 + word.count >= 76, "broken too early: \(line) / \(next)")
        }
    }

    /// `--since` takes a line of `watch --state` as printed, not only EPOCH:VERSION.
    @Test func watchSinceTakesAStateLineAsPrinted() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let line = try await runTether(["watch", "--url", daemon.url, "--state", "--once", "counter"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await runTether(["send", "--url", daemon.url, "counter", "increment"]).status == 0)
        let resumed = try await runTether(["watch", "--url", daemon.url, "--since", line, "--count", "1", "counter"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let frames = try jsonLines(resumed.stdout)
        #expect(frames.last?["type"] == "patch" && frames.last?["from"] == 0 && frames.last?["version"] == 1, "\(resumed.stdout)")
        // Another room's line is refused rather than resumed from.
        let other = try await runTether(["watch", "--url", daemon.url, "--since", line, "--count", "1", "todo"])
        #expect(other.status == 64 && other.stderr.contains("counter"), "\(other.stderr)")
    }

    // MARK: Helpers

    let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#

    /// A scripted server answering `describe` for two kinds.
    func describingServer() throws -> ScriptedServer {
        let counter = #"{"name":"counter","scope":"shared","actions":[{"name":"increment","args":{"by":{"type":"integer","optional":true}}},{"name":"reset","args":{}}]}"#
        let login = #"{"name":"login","scope":"perSession","actions":[{"name":"setEmail","args":{"value":{"type":"string"}}},{"name":"signIn","args":{}}]}"#
        return try ScriptedServer(greeting: [hello]) { text in
            guard let request = try? JSONParser().parse(text), request["type"] == "describe", let id = request["id"]?.intValue else { return [] }
            switch request["kind"]?.stringValue {
            case nil: return [#"{"type":"description","id":\#(id),"kinds":[\#(counter),\#(login)]}"#]
            case "counter": return [#"{"type":"description","id":\#(id),"kinds":[\#(counter)]}"#]
            case "login": return [#"{"type":"description","id":\#(id),"kinds":[\#(login)]}"#]
            case let kind?: return [#"{"type":"error","code":"unknown_room","message":"no room kind \"\#(kind)\"; kinds are counter, login","id":\#(id),"applied":false}"#]
            }
        }
    }

    /// A token from `tetherd token` for the secret "s3cret".
    func tetherdToken(rooms: String) throws -> String {
        let result = try Daemon.runToExit(["token", "--secret", "s3cret", "--subject", "tester", "--rooms", rooms, "--ttl", "300"])
        guard result.status == 0 else { throw TestFailure("tetherd token failed: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
