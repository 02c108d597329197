import Foundation
import Testing
import TetherTestSupport

/// schemathesis (PyPI; Scripts/setup.sh installs it into .tools/schemathesis) fuzzes the HTTP
/// API from its own /openapi.json against a real tetherd with tokens: no 5xx, every status and
/// body as documented, schema-invalid requests refused, requests without a token refused.
@Suite("End to end: the HTTP API fuzzed from its OpenAPI document", .timeLimit(.minutes(5)))
struct HTTPAPIFuzzTests {
    @Test func schemathesisFindsNothing() throws {
        let secret = "fuzz-secret"
        let daemon = try Daemon(arguments: ["--auth-secret", secret, "--max-rooms-per-kind", "100000"])  // stored: the history answers
        defer { _ = daemon.stop() }
        let minted = try Daemon.runToExit(["token", "--secret", secret, "--subject", "fuzz", "--rooms", "*", "--admin", "--ttl", "3600"])
        let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = Repository.root.appendingPathComponent(".tools/schemathesis").path
        // One worker: with two, Hypothesis on Python 3.11 sometimes fails describing a filter
        // ("AST constructor recursion depth mismatch", compiling on two threads at once), an
        // error of the tool that failed 2 runs in 7; with one, 6 of 6 passed.
        // unsupported_method is left out: libwebsockets answers a method it does not parse
        // (TRACE) with 403 before tetherd sees it; the methods it parses get 405 (below).
        let result = try runProgram(URL(fileURLWithPath: "/usr/bin/python3"), [
            "-m", "schemathesis.cli", "--config-file", Repository.root.appendingPathComponent("Tests/HTTP/schemathesis.toml").path,
            "run", "http://127.0.0.1:\(daemon.port)/openapi.json", "--checks", "all", "--exclude-checks", "unsupported_method",
            "-H", "Authorization: Bearer \(token)", "--max-examples", "20", "--seed", "1", "--workers", "1", "--request-timeout", "15",
        ], environment: environment, timeout: .seconds(240))
        #expect(result.status == 0, "schemathesis (run Scripts/setup.sh to install it): \(result.stdout.suffix(6000)) \(result.stderr.suffix(2000))")
        #expect(result.stdout.contains(" passed"), "\(result.stdout.suffix(2000))")
        #expect(daemon.isRunning)
    }

    @Test func eachAPIPathAnswersAMethodItDoesNotTakeWith405AndAllow() throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { _ = daemon.stop() }
        for (method, path, allow) in [("PUT", "/rooms/counter", "get, head, post, delete, options"), ("POST", "/rooms/counter", "get, head, delete"),
                                      ("GET", "/rooms/counter/actions/increment", "post"), ("PATCH", "/kinds", "get, head, post, delete, options"),
                                      ("DELETE", "/rooms/counter/events", "get, head"), ("POST", "/openapi.json", "get, head")] {
            let answer = try RawSocket(port: daemon.port).http("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
            #expect(answer.status == 405 && answer.headers.lowercased().contains("allow: \(allow)\r\n"), "\(method) \(path): \(answer.headers)")
        }
    }
}
