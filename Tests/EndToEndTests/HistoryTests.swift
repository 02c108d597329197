import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport

/// A room's history on a real daemon: `tether history` names the viewer, client and action of
/// every kept version, across a restart; only an admin token reads it; the clock's timer steps
/// say so; arguments are a digest that compares equal.
@Suite("End to end: a room's history (who changed what)", .serialized)
@MainActor
struct HistoryTests {
    nonisolated static let secret = "history-secret"

    nonisolated static func token(_ subject: String, admin: Bool = false) throws -> String {
        let result = try Daemon.runToExit(["token", "--secret", secret, "--subject", subject, "--rooms", "*", "--ttl", "600"] + (admin ? ["--admin"] : []))
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    nonisolated static func tether(_ daemon: Daemon, _ arguments: [String], token: String) throws -> (status: Int32, stdout: String, stderr: String) {
        try runProgram(Daemon.executable("tether"), ["history", "--url", daemon.url, "--token", token] + arguments)
    }

    /// Sends `actions` as `subject`, each numbered by the client (its id is the client's own).
    func act(_ daemon: Daemon, as subject: String, _ actions: [(String, JSON)]) async throws {
        var options = ClientOptions(url: daemon.url, token: try Self.token(subject))
        options.reconnect.isEnabled = false
        let client = TetherClient(options: options)
        try client.connect()
        let room = client.room("todo:history")
        try await eventually("\(subject) joined") { room.isSynced }
        for (action, args) in actions { _ = try await client.send(action, to: "todo:history", args: args) }
        await client.close()
    }

    @Test func historyNamesWhoMadeEachVersionAcrossARestart() async throws {
        let directory = Daemon.temporaryDirectory()
        var daemon = try Daemon(arguments: ["--auth-secret", Self.secret], dataDirectory: directory)
        try await act(daemon, as: "alice", [("add", ["title": "milk"]), ("add", ["title": "bread"])])
        try await act(daemon, as: "bob", [("add", ["title": "milk"])])
        _ = daemon.stop()
        daemon = try Daemon(arguments: ["--auth-secret", Self.secret], dataDirectory: directory)
        defer { _ = daemon.stop() }
        let admin = try Self.token("ops", admin: true)

        let answer = try Self.tether(daemon, ["todo:history", "--json"], token: admin)
        #expect(answer.status == 0, "\(answer.stderr)")
        let json = try JSON(parsing: answer.stdout)
        let steps = json["steps"]?.arrayValue ?? []
        #expect(steps.map { $0["version"]?.intValue } == [3, 2, 1], "newest first: \(answer.stdout)")
        #expect(steps.map { $0["viewer"]?.stringValue } == ["bob", "alice", "alice"])
        // To-do lists keep their arguments (other kinds a digest: ClusterHistoryTests).
        #expect(steps.allSatisfy { $0["cause"] == "action" && $0["action"] == "add" && $0["argsDigest"] == nil })
        #expect(steps.map { $0["args"]?["title"]?.stringValue } == ["milk", "bread", "milk"], "\(steps)")
        #expect(Set(steps.compactMap { $0["client"]?.stringValue }).count == 2 && steps.allSatisfy { $0["seq"]?.intValue != nil },
                "each client's numbered actions: \(steps)")
        #expect(steps.allSatisfy { $0["paths"]?.arrayValue?.isEmpty == false && $0["ops"]?.intValue == 1 })

        let alice = try Self.tether(daemon, ["todo:history", "--viewer", "alice"], token: admin)
        let lines = alice.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3 && lines[0].hasPrefix("v2") && lines[1].hasPrefix("v1") && lines[0].contains("alice (") && lines[0].contains(#" add {"title":"bread"}"#),
                "\(alice.stdout)")
        #expect(lines.last == "todo:history is at v3; versions from v1 are kept")

        // The state at each version, as the mirrors saw it then.
        let titles = { (version: Int) throws -> [String] in
            let shown = try runProgram(Daemon.executable("tether"), ["show", "--url", daemon.url, "--token", admin, "todo:history", "--at", "\(version)", "--json"])
            #expect(shown.status == 0, "\(shown.stderr)")
            return try JSON(parsing: shown.stdout)["state"]?["items"]?.arrayValue?.compactMap { $0["title"]?.stringValue } ?? []
        }
        #expect(try titles(1) == ["milk"] && titles(2) == ["milk", "bread"] && titles(3) == ["milk", "bread", "milk"])
        let human = try runProgram(Daemon.executable("tether"), ["show", "--url", daemon.url, "--token", admin, "todo:history", "--at", "1"])
        #expect(human.stdout.hasPrefix("todo:history at v1 (epoch ") && human.stdout.contains("      \"title\": \"milk\""), "\(human.stdout)")
        let future = try runProgram(Daemon.executable("tether"), ["show", "--url", daemon.url, "--token", admin, "todo:history", "--at", "9"])
        #expect(future.status == 2 && future.stderr.contains("version 9 is not kept: todo:history is at version 3"), "\(future)")

        // What changed between two versions, and who made the versions between.
        let diff = try runProgram(Daemon.executable("tether"), ["diff", "--url", daemon.url, "--token", admin, "todo:history", "1", "3"])
        #expect(diff.status == 0, "\(diff.stderr)")
        let diffLines = diff.stdout.split(separator: "\n").map(String.init)
        #expect(diffLines.first?.hasPrefix("todo:history from v1 to v3: 2 versions, made by ") == true, "\(diff.stdout)")
        #expect(diffLines.dropFirst().map { $0.prefix(13) } == ["+ /items/1  {", "+ /items/2  {"], "\(diff.stdout)")
        let diffJSON = try runProgram(Daemon.executable("tether"), ["diff", "--url", daemon.url, "--token", admin, "todo:history", "1", "3", "--json"])
        let patch = try JSON(parsing: diffJSON.stdout)["patch"]?.arrayValue ?? []
        #expect(patch.map { $0["op"] } == ["add", "add"] && patch.map { $0["path"] } == ["/items/1", "/items/2"], "\(diffJSON)")

        let refused = try Self.tether(daemon, ["todo:history"], token: try Self.token("alice"))
        #expect(refused.status == 2 && refused.stderr.contains("admin"), "\(refused)")
    }

    @Test func aTimersStepsSayTheTimerMadeThem() async throws {
        let daemon = try Daemon(arguments: ["--auth-secret", Self.secret])
        defer { _ = daemon.stop() }
        var options = ClientOptions(url: daemon.url, token: try Self.token("carol"))
        options.reconnect.isEnabled = false
        let client = TetherClient(options: options)
        try client.connect()
        let clock = client.room("clock")
        try await eventually("the clock ticked twice", timeout: .seconds(10)) { (clock.version ?? 0) >= 2 }
        await client.close()
        let admin = try Self.token("ops", admin: true)
        let answer = try Self.tether(daemon, ["clock", "--json", "--limit", "2"], token: admin)
        let steps = try JSON(parsing: answer.stdout)["steps"]?.arrayValue ?? []
        #expect(steps.count == 2 && steps.allSatisfy { $0["cause"] == "timer" && $0["timer"] == 0 && $0["viewer"] == nil }, "\(answer)")
    }
}
