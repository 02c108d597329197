import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// What only the binary shows about settings: a mistake is one line on stderr and exit 64 (the
/// loader's cases are in TetherServerTests' ConfigurationTests), and the environment reaches it.
@Suite("tetherd settings", .timeLimit(.minutes(2)))
struct SettingsTests {
    static var tetherd: URL {
        ProcessInfo.processInfo.environment["TETHERD"].map(URL.init(fileURLWithPath:)) ?? Daemon.executable("tetherd")
    }

    @Test func everyMistakeIsOneLineOnStderrAndExit64() throws {
        let file = NSTemporaryDirectory() + "tether-settings-\(UUID().uuidString).yaml"
        try "port: 0\nmax-room: 5\n".write(toFile: file, atomically: true, encoding: .utf8)
        let badValue = NSTemporaryDirectory() + "tether-settings-\(UUID().uuidString).yaml"
        try "port: eighty\n".write(toFile: badValue, atomically: true, encoding: .utf8)
        defer { unlink(file); unlink(badValue) }
        let environment = ProcessInfo.processInfo.environment
        let cases: [(arguments: [String], environment: [String: String], says: String)] = [
            (["--port", "0", "--nope"], [:], "unknown option --nope"),
            (["--port", "x"], [:], "--port: \"x\" is not an integer"),
            (["--port", "0", "--strict-env"], ["TETHERD_PROT": "1"], "unknown environment variable TETHERD_PROT"),
            (["--port", "0"], ["TETHERD_MAX_ROOMS": "many"], "TETHERD_MAX_ROOMS: \"many\" is not an integer"),
            (["--config", badValue], [:], "\(badValue): port: \"eighty\" is not an integer"),
            (["--config", file], [:], "\(file): unknown setting \"max-room\""),
        ]
        for mistake in cases {
            let run = try runProgram(Self.tetherd, ["--memory-only"] + mistake.arguments,
                                     environment: environment.merging(mistake.environment) { _, new in new }, timeout: .seconds(10))
            #expect(run.status == 64, "\(mistake.arguments) \(mistake.environment): status \(run.status), stderr \(run.stderr)")
            let lines = run.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one line, got: \(run.stderr)")
            #expect(lines.first?.hasPrefix("tetherd: ") == true && run.stderr.contains(mistake.says), "\(run.stderr)")
            #expect(run.stdout.isEmpty, "nothing on stdout: \(run.stdout)")
        }
    }

    @Test func theEnvironmentAndTheFileReachTheDaemon() throws {
        let file = NSTemporaryDirectory() + "tether-settings-\(UUID().uuidString).json"
        try #"{"max-rooms": 2, "max-rooms-per-connection": 9}"#.write(toFile: file, atomically: true, encoding: .utf8)
        defer { unlink(file) }
        // max-rooms from the file; max-rooms-per-connection from the environment, over the file's.
        let daemon = try Daemon(arguments: ["--config", file], environment: ["TETHERD_MAX_ROOMS_PER_CONNECTION": "1"])
        defer { daemon.stop() }
        func join(_ socket: RawWebSocket, _ room: String, id: Int) throws -> JSON {
            try socket.sendText(#"{"type":"join","room":"\#(room)","id":\#(id)}"#)
            return try socket.receiveJSON { $0["id"] == .int(id) }
        }
        let first = try RawWebSocket(port: daemon.port), second = try RawWebSocket(port: daemon.port)
        #expect(try join(first, "counter", id: 1)["type"] == "ack")
        let perConnection = try join(first, "todo", id: 2)
        #expect(perConnection["code"] == "rate_limited" && perConnection["message"]?.stringValue?.contains("at most 1 rooms") == true, "\(perConnection)")
        #expect(try join(second, "todo", id: 3)["type"] == "ack")
        let third = try RawWebSocket(port: daemon.port)
        let serverWide = try join(third, "gallery", id: 4)
        #expect(serverWide["code"] == "rate_limited" && serverWide["message"]?.stringValue?.contains("maximum of 2 rooms") == true, "\(serverWide)")
    }

    /// A variable that only looks like a setting (a wrapper's TETHERD_BIN) is one warning naming
    /// the closest setting, not a refusal to start; --strict-env refuses it.
    @Test func aStrayEnvironmentVariableIsAWarning() throws {
        let daemon = try Daemon(arguments: ["--memory-only"], logLevel: "info", environment: ["TETHERD_BIN": "/usr/bin/tetherd", "TETHERD_PROT": "1"])
        defer { daemon.stop() }
        let deadline = ContinuousClock.now + .seconds(5)
        while daemon.stderr.components(separatedBy: "TETHERD_PROT").count < 2, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let warnings = daemon.stderr.split(separator: "\n").filter { $0.contains("TETHERD_") }
        #expect(warnings.count == 2, "\(daemon.stderr)")
        #expect(warnings.contains { $0.contains("TETHERD_PROT") && $0.contains("TETHERD_PORT") }, "\(daemon.stderr)")
        #expect(warnings.contains { $0.contains("TETHERD_BIN") && $0.contains("ignored") }, "\(daemon.stderr)")

        let check = try runProgram(Self.tetherd, ["check", "--memory-only"],
                                   environment: ProcessInfo.processInfo.environment.merging(["TETHERD_BIN": "x"]) { _, new in new })
        #expect(check.status == 0 && check.stderr.contains("TETHERD_BIN"), "\(check.stderr)")
        let strict = try runProgram(Self.tetherd, ["check", "--memory-only", "--strict-env"],
                                    environment: ProcessInfo.processInfo.environment.merging(["TETHERD_BIN": "x"]) { _, new in new })
        #expect(strict.status == 78 && strict.stderr.contains("unknown environment variable TETHERD_BIN"), "\(strict.stderr)")
        #expect(try Daemon.runToExit(["--help"]).stdout.contains("--strict-env"))
    }

    /// A token that would be expired when printed is refused, and a negative --ttl is read as
    /// the number it is.
    @Test func tokenRefusesATTLThatIsNotPositive() throws {
        for ttl in ["0", "-5"] {
            let run = try Daemon.runToExit(["token", "--secret", "s3cret", "--rooms", "*", "--ttl", ttl])
            #expect(run.status == 64 && run.stdout.isEmpty, "--ttl \(ttl): \(run.stdout)")
            #expect(run.stderr.contains("--ttl must be a positive number of seconds"), "--ttl \(ttl): \(run.stderr)")
        }
    }

    /// A --room-expiry the daemon cannot honour is a bad setting (64, as --help says), whether
    /// malformed or naming a kind that has no stored rooms; `check` reports it too (78).
    @Test func aRoomExpiryThatDoesNotFitIsABadSetting() throws {
        let cases = [("chess=1d", "no room kind"), ("login=1d", "per-session"), ("counter=5x", "ages such as"), ("counter", "kind=age pairs")]
        for (value, says) in cases {
            let run = try Daemon.runToExit(["--memory-only", "--port", "0", "--room-expiry", value], timeout: .seconds(10))
            #expect(run.status == 64 && run.stderr.contains(says), "\(value): status \(run.status), \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(value): \(run.stderr)")
            let check = try Daemon.runToExit(["check", "--memory-only", "--room-expiry", value], timeout: .seconds(10))
            #expect(check.status == 78 && check.stderr.contains(says), "check \(value): status \(check.status), \(check.stderr)")
        }
    }
}
