import Foundation
import Testing
import TetherTestSupport

/// `tetherd check` and `tetherd sample-config`.
@Suite("End to end: tetherd check")
struct ConfigCheckTests {
    @Test func theSampleConfigChecksOut() throws {
        let directory = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sample = try Daemon.runToExit(["sample-config", "--data", directory + "/data"])
        #expect(sample.status == 0)
        let file = directory + "/tetherd.yaml"
        try sample.stdout.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try Daemon.runToExit(["check", "--config", file])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("\(file) is valid") && check.stdout.contains("data in \(directory)/data"), "\(check.stdout)")
        let bare = try Daemon.runToExit(["check", "--data", directory + "/data"])
        #expect(bare.stdout.hasPrefix("tetherd check: the settings are valid: "), "\(bare.stdout)")
        // Every option of --help is in the file.
        let help = try Daemon.runToExit(["--help"]).stdout
        let keys = help.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("--"), let key = trimmed.dropFirst(2).split(separator: " ").first else { return nil }
            return String(key)
        }.filter { $0 != "config" && $0 != "strict-env" }  // about reading the settings, not settings
        #expect(keys.count > 20)
        for key in keys { #expect(sample.stdout.contains("# \(key): ") || sample.stdout.contains("\n\(key): "), "\(key) is in the sample") }
    }

    @Test func everyProblemIsOneLineAndExit78() throws {
        let first = try SecurityTests.makeCertificate(), second = try SecurityTests.makeCertificate()
        let directory = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secrets = directory + "/secrets.yaml"
        try "k: \"a secret\"\n".write(toFile: secrets, atomically: true, encoding: .utf8)
        chmod(secrets, 0o644)
        let notADirectory = directory + "/file"
        try "x".write(toFile: notADirectory, atomically: true, encoding: .utf8)
        let config = directory + "/tetherd.yaml"
        try "tls-cert: \(first.cert)\ntls-key: \(second.key)\nauth-secrets-file: \(secrets)\ndata: \(notADirectory)\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let check = try Daemon.runToExit(["check", "--config", config])
        #expect(check.status == 78)
        let lines = check.stderr.split(separator: "\n")
        #expect(lines.count == 3, "\(check.stderr)")
        #expect(lines.contains { $0.contains("does not belong to the certificate") })
        #expect(lines.contains { $0.contains("auth-secrets-file: \(secrets) can be read by every user") })
        #expect(lines.contains { $0.contains("data: \(notADirectory) is not a directory") })

        // A file that doesn't read is one line too.
        try "port: [8080\n".write(toFile: config, atomically: true, encoding: .utf8)
        let broken = try Daemon.runToExit(["check", "--config", config])
        #expect(broken.status == 78 && broken.stderr.split(separator: "\n").count == 1, "\(broken.stderr)")
        // And a clean one passes.
        chmod(secrets, 0o600)
        try "tls-cert: \(first.cert)\ntls-key: \(first.key)\nauth-secrets-file: \(secrets)\ndata: \(directory)/data\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        chmod(first.key, 0o600)
        let clean = try Daemon.runToExit(["check", "--config", config])
        #expect(clean.status == 0, "\(clean.stderr)")
    }

    /// Settings that don't load are reported all at once, one line each, not only the first.
    @Test func everySettingThatDoesNotLoadIsReported() throws {
        let directory = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/tetherd.yaml"
        try "max-room: 5\nping-seconds: often\n".write(toFile: config, atomically: true, encoding: .utf8)
        let check = try runProgram(SettingsTests.tetherd, ["check", "--config", config, "--port", "abc", "--bogus", "--max-rooms", "x"],
                                   environment: ProcessInfo.processInfo.environment.merging(["TETHERD_MAX_CONNECTIONS": "lots"]) { _, new in new })
        #expect(check.status == 78)
        let lines = check.stderr.split(separator: "\n").map(String.init)
        for problem in ["unknown option --bogus", "port: \"abc\" is not an integer", "max-rooms: \"x\" is not an integer",
                        "TETHERD_MAX_CONNECTIONS: \"lots\" is not an integer", "unknown setting \"max-room\"", "\(config): ping-seconds: \"often\""] {
            #expect(lines.contains { $0.hasPrefix("tetherd: check: ") && $0.contains(problem) }, "\(problem) in:\n\(check.stderr)")
        }
        #expect(lines.count == 6, "\(check.stderr)")
    }
}
