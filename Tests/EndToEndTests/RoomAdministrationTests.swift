import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherProtocol
import TetherTestSupport

/// Room administration over the daemon's HTTP side: `GET /rooms` and `DELETE /rooms/NAME`, who
/// may use them, what a subscribed client sees of a deletion, and that the database forgets
/// the room across a restart.
@Suite("End to end: room administration over HTTP", .serialized)
@MainActor
struct RoomAdministrationTests {
    nonisolated static let secret = "room-admin-secret"

    nonisolated static func token(admin: Bool) throws -> String {
        let result = try Daemon.runToExit(["token", "--secret", secret, "--subject", admin ? "ops" : "alice", "--rooms", "*", "--ttl", "600"]
                                          + (admin ? ["--admin"] : []))
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// One request on a fresh connection: (status, JSON body).
    nonisolated static func http(_ daemon: Daemon, _ method: String, _ path: String, token: String? = nil) throws -> (status: Int, json: JSON?) {
        let authorization = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        let answer = try RawSocket(port: daemon.port).http("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(authorization)\r\n")
        return (answer.status, try? JSON(parsing: String(decoding: answer.body, as: UTF8.self)))
    }

    nonisolated static func names(_ json: JSON?) -> [String] {
        json?["rooms"]?.arrayValue?.compactMap { $0["name"]?.stringValue }.filter { !$0.hasPrefix("tether.") } ?? []
    }

    @Test func listingAndDeletingNeedTheAdminTokenAndASubscriberIsToldOfTheDeletion() async throws {
        let daemon = try Daemon(arguments: ["--auth-secret", Self.secret, "--idle-room-seconds", "1"])
        let admin = try Self.token(admin: true), alice = try Self.token(admin: false)
        var options = ClientOptions(url: daemon.url, token: alice)
        options.reconnect.isEnabled = false
        let client = TetherClient(options: options)
        try client.connect()
        for (room, action, args) in [("counter", "increment", ["by": 3]), ("todo:nc", "add", ["title": "milk"]), ("vote:nc", "vote", ["option": "pizza"])] as [(String, String, JSON)] {
            let mirror = client.room(room)
            try await eventually("\(room) joined") { mirror.isSynced }
            _ = try await client.send(action, to: room, args: args)
        }
        let subscribed = client.room("todo:nc")
        for room in ["counter", "vote:nc"] { client.room(room).leave() }

        // Who may list: the admin token only.
        #expect(try Self.http(daemon, "GET", "/rooms").status == 401)
        let ordinary = try Self.http(daemon, "GET", "/rooms", token: alice)
        #expect(ordinary.status == 403 && ordinary.json?["error"]?.stringValue?.contains("admin claim") == true)
        #expect(try Self.http(daemon, "GET", "/rooms", token: "not-a-token").status == 401)
        #expect(try Self.http(daemon, "DELETE", "/rooms/counter", token: alice).status == 403)

        // Rooms whose clients left are listed, stored; the joined one in memory with its subscriber.
        try await eventually("counter and vote:nc leave memory", timeout: .seconds(10)) {
            let rooms = try Self.http(daemon, "GET", "/rooms", token: admin).json?["rooms"]?.arrayValue ?? []
            return rooms.filter { $0["inMemory"] == false }.compactMap { $0["name"]?.stringValue } == ["counter", "vote:nc"]
        }
        let listing = try Self.http(daemon, "GET", "/rooms", token: admin)
        #expect(Self.names(listing.json) == ["counter", "todo:nc", "vote:nc"])
        let todo = try #require(listing.json?["rooms"]?.arrayValue?.first { $0["name"] == "todo:nc" })
        #expect(todo["inMemory"] == true && todo["subscribers"] == 1 && todo["version"] == 1 && todo["kind"] == "todo")
        let now = Int(Date().timeIntervalSince1970)
        #expect(((now - 30)...now).contains(todo["lastChange"]?.intValue ?? 0))
        #expect((todo["bytes"]?.intValue ?? 0) > 0)

        // Deleting the joined room: the client is told, its mirror stops; joining again is a new room.
        let deleted = try Self.http(daemon, "DELETE", "/rooms/todo%3Anc", token: admin)
        #expect(deleted.status == 200)
        #expect(deleted.json == ["deleted": "todo:nc", "wasInMemory": true, "subscribers": 1])
        try await eventually("the client hears of it") { subscribed.lastError.value?.code == .roomDeleted }
        #expect(!subscribed.isSynced && subscribed.state["items"]?.arrayValue?.count == 1, "the last state is kept")
        let fresh = client.room("todo:nc")
        #expect(fresh !== subscribed)
        try await eventually("a new, empty room") { fresh.isSynced }
        #expect(fresh.state == ["items": []])

        // What can't be deleted, and a second deletion of a stored room.
        #expect(try Self.http(daemon, "DELETE", "/rooms/tether.server", token: admin).status == 409)
        #expect(try Self.http(daemon, "DELETE", "/rooms/login", token: admin).status == 409)
        #expect(try Self.http(daemon, "DELETE", "/rooms/counter:never", token: admin).status == 404)
        #expect(try Self.http(daemon, "DELETE", "/rooms/vote%3Anc", token: admin).json?["wasInMemory"] == false)
        #expect(try Self.http(daemon, "DELETE", "/rooms/vote%3Anc", token: admin).status == 404)
        #expect(try Self.http(daemon, "PUT", "/rooms", token: admin).status == 405)
        await client.close()

        // After a restart the database holds what the list said: counter, and the new todo:nc.
        #expect(daemon.stop() == 0)
        let restarted = try Daemon(arguments: ["--auth-secret", Self.secret], port: daemon.port, dataDirectory: daemon.dataDirectory)
        defer { restarted.stop() }
        let after = try Self.http(restarted, "GET", "/rooms", token: admin)
        #expect(Self.names(after.json) == ["counter", "todo:nc"])
        #expect(after.json?["rooms"]?.arrayValue?.first { $0["name"] == "todo:nc" }?["version"] == 0)
    }

    @Test func withoutTokenSecretsALoopbackDaemonAnswersAnyone() throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "counter:open"])
        _ = try socket.receiveJSON()
        let listing = try Self.http(daemon, "GET", "/rooms")
        #expect(listing.status == 200 && Self.names(listing.json) == ["counter:open"])
        #expect(try Self.http(daemon, "DELETE", "/rooms/counter%3Aopen").status == 200)
        let told = try socket.receiveJSON()
        #expect(told["type"] == "error" && told["code"] == "room_deleted" && told["room"] == "counter:open")
    }

    @Test func theLimitOfRoomsPerKindAndUnknownInstancesAreRefused() throws {
        let daemon = try Daemon(arguments: ["--memory-only", "--max-rooms-per-kind", "1"])
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "action", "room": "counter:a", "name": "increment", "id": 1])
        #expect(try socket.receiveJSON()["type"] == "ack")
        try socket.send(json: ["type": "action", "room": "counter:b", "name": "increment", "id": 2])
        let limited = try socket.receiveJSON()
        #expect(limited["code"] == "rate_limited" && limited["message"]?.stringValue?.contains("--max-rooms-per-kind") == true)
        try socket.send(json: ["type": "join", "room": "clock:utc", "id": 3])
        #expect(try socket.receiveJSON()["code"] == "unknown_room")
    }
}
