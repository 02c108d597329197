import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// `tether rooms` and `tether rooms delete` against a real daemon: over wss:// with the daemon's
/// certificate and an admin token from a file, as a table for people and as JSON for scripts,
/// and the exit statuses of a refusal and of an unreachable server.
@Suite("tether rooms", .serialized, .timeLimit(.minutes(2)))
struct RoomsCommandTests {
    static let secret = "rooms-command-secret"

    static func certificate() throws -> (cert: String, key: String) {
        let directory = Daemon.temporaryDirectory()
        let script = Repository.root.appendingPathComponent("Scripts/make-cert.sh")
        let result = try runProgram(script, [directory])
        #expect(result.status == 0, "\(result.stderr)")
        return (directory + "/cert.pem", directory + "/key.pem")
    }

    static func token(admin: Bool) throws -> String {
        let result = try Daemon.runToExit(["token", "--secret", secret, "--rooms", "*", "--ttl", "600"] + (admin ? ["--admin"] : []))
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func listsAndDeletesOverTLSWithAnAdminToken() async throws {
        let tls = try Self.certificate()
        let daemon = try Daemon(arguments: ["--tls-cert", tls.cert, "--tls-key", tls.key, "--auth-secret", Self.secret, "--idle-room-seconds", "1"])
        defer { daemon.stop() }
        let url = "wss://127.0.0.1:\(daemon.port)"
        let admin = try Self.token(admin: true)
        let tokenFile = Daemon.temporaryDirectory() + "/admin.token"
        try admin.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let connection = ["--url", url, "--ca", tls.cert]
        for (room, action, args) in [("counter", "increment", #"{"by":3}"#), ("todo:nc", "add", #"{"title":"milk"}"#)] {
            let sent = try await runTether(["send"] + connection + ["--token", admin, room, action, args])
            #expect(sent.status == 0, "\(sent.stderr)")
        }

        let table = try await runTether(["rooms"] + connection + ["--token-file", tokenFile])
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.split(separator: " ", omittingEmptySubsequences: true).prefix(3) == ["ROOM", "KIND", "IN"])
        let todo = try #require(lines.first { $0.hasPrefix("todo:nc ") })
        #expect(todo.contains(" todo ") && todo.contains(" B ") && todo.contains("(just now)"), "\(todo)")
        #expect(lines.last?.hasPrefix("2 rooms: ") == true, "\(lines.last ?? "")")

        let json = try await runTether(["rooms"] + connection + ["--token-file", tokenFile, "--json"])
        let rooms = try #require(try jsonLines(json.stdout).first?["rooms"]?.arrayValue)
        #expect(rooms.compactMap { $0["name"]?.stringValue } == ["counter", "todo:nc"])
        #expect(rooms.first?["version"] == 1 && rooms.first?["kind"] == "counter")

        let deleted = try await runTether(["rooms", "delete"] + connection + ["--token-file", tokenFile, "todo:nc"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(deleted.stdout.hasPrefix("deleted todo:nc ("))
        let again = try await runTether(["rooms", "delete"] + connection + ["--token-file", tokenFile, "todo:nc"])
        #expect(again.status == 2)
        #expect(again.stderr == "tether: cannot delete todo:nc: no room todo:nc\n")
        let left = try jsonLines(try await runTether(["rooms"] + connection + ["--token-file", tokenFile, "--json"]).stdout)
        #expect(left.first?["rooms"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["counter"])

        // Without the admin claim, and without a token: exit 2 with the server's sentence.
        let ordinary = try await runTether(["rooms"] + connection + ["--token", try Self.token(admin: false)])
        #expect(ordinary.status == 2 && ordinary.stderr.contains("admin claim"), "\(ordinary.stderr)")
        let none = try await runTether(["rooms"] + connection)
        #expect(none.status == 2 && none.stderr.contains("--token-file") && none.stderr.contains("$TETHER_TOKEN")
                && none.stderr.contains("tetherd token --admin") && !none.stderr.contains("Authorization"), "\(none.stderr)")
        // The certificate is checked as for every command.
        let untrusted = try await runTether(["rooms", "--url", url, "--token-file", tokenFile])
        #expect(untrusted.status == 1 && untrusted.stderr.contains("not trusted"), "\(untrusted.stderr)")
    }

    @Test func anUnreachableServerExits1AndTheHelpSaysWhatItDoes() async throws {
        let port = try freePort()
        let result = try await runTether(["rooms", "--url", "ws://127.0.0.1:\(port)"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("nothing answers"), "\(result.stderr)")
        let help = try await runTether(["rooms", "delete", "--help"])
        #expect(help.status == 0 && help.stdout.contains("room_deleted") && help.stdout.contains("cluster"))
        let top = try await runTether(["--help"])
        #expect(top.stdout.contains("tether rooms delete"))
    }
}
