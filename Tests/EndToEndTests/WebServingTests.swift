import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// What tetherd serves to browsers, over raw sockets: the dashboard's files with their headers,
/// the Origin check and the subprotocol answer on WebSocket upgrades, and the system room
/// `tether.server` behind admin tokens.
@Suite("End to end: the web side", .serialized)
struct WebServingTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func get(_ daemon: Daemon, _ path: String) throws -> HTTP.Answer {
        try HTTP.exchange(port: daemon.port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.port)\r\n\r\n")
    }

    @Test func theDashboardAndItsScriptsAreServedWithTheirHeaders() throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let files = [
            ("/", "text/html", "Clients/web/dashboard/index.html"),
            ("/dashboard.js", "text/javascript", "Clients/web/dashboard/dashboard.js"),
            ("/dashboard.css", "text/css", "Clients/web/dashboard/dashboard.css"),
            ("/tether.js", "text/javascript", "Clients/web/tether.js"),
            ("/examples/counter.html", "text/html", "Clients/web/examples/counter.html"),
            ("/examples/counter.js", "text/javascript", "Clients/web/examples/counter.js"),
        ]
        for (path, type, source) in files {
            let answer = try Self.get(daemon, path)
            #expect(answer.status == 200, "\(path)")
            #expect(answer.headers["content-type"]?.hasPrefix(type) == true, "\(path): \(answer.headers)")
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(path)")
            let policy = answer.headers["content-security-policy"] ?? ""
            #expect(policy.contains("script-src 'self'") && policy.contains("style-src 'self'") && !policy.contains("unsafe-inline"), "\(path): \(policy)")
            #expect(answer.body == Array(try Data(contentsOf: Self.repository.appendingPathComponent(source))), "\(path) is \(source)")
        }
        let missing = try Self.get(daemon, "/no-such-file.js")
        #expect(missing.status == 404 && missing.headers["x-content-type-options"] == "nosniff")
        #expect(try Self.get(daemon, "/examples/").status == 404)
        #expect(try Self.get(daemon, "/index.html").status == 404)
        #expect(try daemon.httpGET("/healthz") == (200, "ok"))
        let metrics = try Self.get(daemon, "/metrics")
        #expect(metrics.status == 200 && metrics.text.contains("tether_connections"))
    }

    @Test func upgradesFromPagesOfOtherOriginsGet403() throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let port = daemon.port
        func upgrade(host: String, origin: String?) throws -> HTTP.Answer {
            try HTTP.exchange(port: port, HTTP.upgradeRequest(host: host, origin: origin))
        }
        #expect(try upgrade(host: "127.0.0.1:\(port)", origin: "http://127.0.0.1:\(port)").status == 101, "the daemon's own page")
        #expect(try upgrade(host: "localhost:\(port)", origin: "http://localhost:\(port)").status == 101, "opened as localhost")
        #expect(try upgrade(host: "127.0.0.1:\(port)", origin: nil).status == 101, "no Origin: not a browser")
        let foreign = try upgrade(host: "127.0.0.1:\(port)", origin: "http://evil.example")
        #expect(foreign.status == 403)
        #expect(foreign.text.contains("--allowed-origins"), "\(foreign.text)")
        #expect(try upgrade(host: "127.0.0.1:\(port)", origin: "http://127.0.0.1:\(port + 1)").status == 403, "another port")
        #expect(try upgrade(host: "127.0.0.1:\(port)", origin: "null").status == 403)
        // The refusals cost nothing else: a client still joins.
        let socket = try RawWebSocket(port: port)
        #expect(try socket.receiveJSON()["type"] == "hello")
    }

    @Test func allowedOriginsLetsListedPagesIn() throws {
        let daemon = try Daemon(arguments: ["--memory-only", "--allowed-origins", "https://app.example.com,http://localhost:3000"])
        defer { daemon.stop() }
        let host = "127.0.0.1:\(daemon.port)"
        for (origin, status) in [("https://app.example.com", 101), ("http://localhost:3000", 101), ("http://\(host)", 101),
                                 ("http://app.example.com", 403), ("https://evil.example", 403)] {
            #expect(try HTTP.exchange(port: daemon.port, HTTP.upgradeRequest(host: host, origin: origin)).status == status, "\(origin)")
        }
        let refused = try Daemon.runToExit(["--memory-only", "--port", "0", "--allowed-origins", "app.example.com"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("allowed-origins") && refused.stderr.contains("is not an origin"), "\(refused.stderr)")
    }

    @Test func aClientOfferingAnotherSubprotocolIsToldOurs() throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let host = "127.0.0.1:\(daemon.port)"
        let other = try HTTP.exchange(port: daemon.port, HTTP.upgradeRequest(host: host, subprotocol: "chat"))
        #expect(other.status == 400)
        #expect(other.text.contains("tether.v1") && other.text.contains("chat"), "\(other.text)")
        let both = try HTTP.exchange(port: daemon.port, HTTP.upgradeRequest(host: host, subprotocol: "chat, tether.v1"))
        #expect(both.status == 101)
        #expect(both.headers["sec-websocket-protocol"] == "tether.v1")
    }

    private func token(_ extra: [String]) throws -> String {
        let result = try Daemon.runToExit(["token", "--secret", "s3cret", "--subject", "ops", "--ttl", "600"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Joins `room` on a fresh connection; the snapshot, or the error's code.
    private func join(_ port: Int, _ room: String, token: String) throws -> JSON {
        let socket = try RawWebSocket(port: port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": .string(room), "token": .string(token)])
        return try socket.receiveJSON(until: { $0["type"] == "snapshot" || $0["type"] == "error" })
    }

    @Test func theServerRoomNeedsAnAdminTokenAndIsNotKept() throws {
        var daemon = try Daemon(arguments: ["--auth-secret", "s3cret"])
        let admin = try token(["--rooms", "counter", "--admin"])
        let everyRoom = try token(["--rooms", "*"])
        let refused = try join(daemon.port, "tether.server", token: everyRoom)
        #expect(refused["code"] == "unauthorized" && refused["message"]?.stringValue?.contains("admin") == true, "\(refused)")
        let first = try join(daemon.port, "tether.server", token: admin)
        #expect(first["type"] == "snapshot", "\(first)")
        let server = first["state"]?["server"]
        #expect(server?["auth"] == true && server?["durability"] == "batch")
        #expect(server?["listen"] == .string("ws://127.0.0.1:\(daemon.port)"))
        #expect(server?["storage"]?["kind"] == "sqlite")
        #expect(server?["storage"]?["path"]?.stringValue?.hasSuffix("/tether.sqlite") == true)
        #expect((server?["storage"]?["bytes"]?.intValue ?? 0) > 0)
        let counter = try join(daemon.port, "counter", token: admin)
        #expect(counter["type"] == "snapshot")

        // Restarted on the same data: the counter continues its epoch, the overview starts anew.
        let (port, data) = (daemon.port, daemon.dataDirectory)
        #expect(daemon.stop() == 0)
        daemon = try Daemon(arguments: ["--auth-secret", "s3cret"], port: port, dataDirectory: data)
        defer { daemon.stop() }
        #expect(try join(port, "counter", token: admin)["epoch"] == counter["epoch"])
        let second = try join(port, "tether.server", token: admin)
        #expect(second["type"] == "snapshot" && second["epoch"] != first["epoch"], "nothing of tether.server is stored")
    }
}
