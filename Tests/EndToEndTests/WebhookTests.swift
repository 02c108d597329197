import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// Webhooks against a real receiver (Tests/HTTP/webhook_receiver.py, which verifies each delivery
/// with the `standardwebhooks` package): what arrives, in what order, signed; nothing lost to a
/// `kill -9`, a receiver down, or one that answers slowly; 410 and dead letters.
@Suite("End to end: webhooks", .serialized, .timeLimit(.minutes(4)))
@MainActor
struct WebhookTests {
    static func act(_ daemon: Daemon, _ count: Int, room: String = "counter", from first: Int = 1) throws {
        for index in first..<(first + count) {
            let answer = try HTTPAPITests.curl("http://127.0.0.1:\(daemon.port)", "POST", "/rooms/\(room)/actions/increment",
                                               headers: ["Tether-Client: hooks", "Idempotency-Key: \(index)"])
            #expect(answer.status == 200, "\(answer)")
        }
    }

    @Test func eventsArriveSignedInOrderWithWhoDidWhat() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let data = Daemon.temporaryDirectory()
        let daemon = try Daemon(arguments: ["--config", try receiver.configFile(events: ["room.created", "action.applied"])], dataDirectory: data)
        defer { daemon.stop() }
        try Self.act(daemon, 20)
        try await eventually("20 actions delivered", timeout: .seconds(20)) { try receiver.appliedVersions(room: "counter") == Array(1...20) }
        let got = try receiver.received()
        #expect(got.bad == 0, "every delivery verifies with standardwebhooks")
        let created = got.events.filter { $0["type"] == "room.created" }
        #expect(created.count == 1 && created.first?["data"]?["room"] == "counter" && created.first?["data"]?["kind"] == "counter")
        let first = try #require(got.events.first { $0["type"] == "action.applied" })
        #expect(first["data"]?["action"] == "increment" && first["data"]?["viewer"] != nil && first["data"]?["args"] == nil, "\(first)")
        // One room's events arrive in version order.
        let order = got.events.filter { $0["type"] == "action.applied" }.compactMap { $0["data"]?["version"]?.intValue }
        #expect(order == Array(1...20), "\(order)")
    }

    /// Members arriving and leaving, and a room deleted, are told too.
    @Test func membersAndDeletionsAreTold() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let daemon = try Daemon(arguments: ["--config", try receiver.configFile(events: ["member.joined", "member.left", "room.deleted"])],
                                dataDirectory: Daemon.temporaryDirectory())
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "vote:lunch", "presence": ["name": "kim"]])
        try await eventually("member.joined") { try receiver.received().events.contains { $0["type"] == "member.joined" } }
        shutdown(socket.socket.fd, Int32(SHUT_RDWR))  // the connection ends: the member leaves
        try await eventually("member.left") { try receiver.received().events.contains { $0["type"] == "member.left" } }
        #expect(try HTTPAPITests.curl("http://127.0.0.1:\(daemon.port)", "DELETE", "/rooms/vote:lunch").status == 200)
        try await eventually("room.deleted") { try receiver.received().events.contains { $0["type"] == "room.deleted" } }
        let events = try receiver.received().events
        let joined = try #require(events.first { $0["type"] == "member.joined" })
        let left = try #require(events.first { $0["type"] == "member.left" })
        #expect(joined["data"]?["room"] == "vote:lunch" && joined["data"]?["member"] == left["data"]?["member"], "\(events)")
        #expect(events.map { $0["type"]?.stringValue ?? "" } == ["member.joined", "member.left", "room.deleted"])
    }

    /// A `kill -9` while deliveries are refused: after the restart every acked action's event
    /// arrives, with the ids it had (duplicates allowed, none lost).
    @Test func aKill9LosesNoEvent() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        try receiver.control(["mode": "status", "status": 503])
        let data = Daemon.temporaryDirectory()
        let config = try receiver.configFile(events: ["action.applied"])
        var daemon = try Daemon(arguments: ["--config", config], dataDirectory: data)
        try Self.act(daemon, 50)
        daemon.kill9()
        try receiver.control(["mode": "ok"])
        daemon = try Daemon(arguments: ["--config", config], dataDirectory: data)
        defer { daemon.stop() }
        let started = ContinuousClock.now
        try await eventually("all 50 delivered after the restart", timeout: .seconds(60)) { try receiver.appliedVersions(room: "counter") == Array(1...50) }
        let got = try receiver.received()
        print("webhooks after kill -9: 50 events acked, \(got.events.count) delivered, \(got.duplicates) duplicates, \(got.attempts) attempts, all within \(ContinuousClock.now - started) of the restart")
        #expect(got.bad == 0)
    }

    /// Down for a while (WEBHOOK_DOWN_SECONDS, default 10), then back on its port: every event
    /// queued meanwhile arrives; the delay after it is back is printed.
    @Test func aReceiverDownComesBackToEveryEvent() async throws {
        let downSeconds = ProcessInfo.processInfo.environment["WEBHOOK_DOWN_SECONDS"].flatMap(Int.init) ?? 10
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let daemon = try Daemon(arguments: ["--config", try receiver.configFile(events: ["action.applied"])], dataDirectory: Daemon.temporaryDirectory())
        defer { daemon.stop() }
        let port = receiver.port
        receiver.stop()
        try Self.act(daemon, 30)
        let metrics = try daemon.httpGET("/metrics").body
        try await Task.sleep(for: .seconds(downSeconds))
        try receiver.start(port: port)
        let back = ContinuousClock.now
        try await eventually("all 30 delivered once it is back", timeout: .seconds(downSeconds * 2 + 60)) { try receiver.appliedVersions(room: "counter") == Array(1...30) }
        print("webhooks with the receiver down \(downSeconds) s: all 30 delivered \(ContinuousClock.now - back) after it came back")
        _ = metrics
    }

    /// A receiver slower than the timeout: the room answers every action at once all the same,
    /// and the events are retried.
    @Test func aSlowReceiverNeverSlowsTheRoom() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        try receiver.control(["mode": "slow", "seconds": 3])
        let daemon = try Daemon(arguments: ["--config", try receiver.configFile(events: ["action.applied"], extra: "    timeout: 1s\n")],
                                dataDirectory: Daemon.temporaryDirectory())
        defer { daemon.stop() }
        var slowest = Duration.zero
        for index in 1...20 {
            let started = ContinuousClock.now
            try Self.act(daemon, 1, from: index)
            slowest = max(slowest, ContinuousClock.now - started)
        }
        #expect(slowest < .seconds(1), "an action took \(slowest)")
        try await eventually("attempts time out and are retried", timeout: .seconds(20)) { try receiver.received().attempts >= 3 }
        try receiver.control(["mode": "ok"])
        try await eventually("all delivered once it is quick", timeout: .seconds(90)) { try receiver.appliedVersions(room: "counter") == Array(1...20) }
    }

    /// 410 disables the endpoint until `POST /webhooks/NAME/retry`; with a short retry-for,
    /// failing events are dead-lettered and counted.
    @Test func goneDisablesAndDeadLettersAreKept() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        try receiver.control(["mode": "gone"])
        let daemon = try Daemon(arguments: ["--config", try receiver.configFile(events: ["action.applied"], extra: "    retry-for: 3s\n")],
                                dataDirectory: Daemon.temporaryDirectory())
        defer { daemon.stop() }
        let base = "http://127.0.0.1:\(daemon.port)"
        try Self.act(daemon, 3)
        try await eventually("disabled after a 410") {
            try HTTPAPITests.curl(base, "GET", "/webhooks").json?["webhooks"]?[0]?["disabled"] == true
        }
        let attempts = try receiver.received().attempts
        try await Task.sleep(for: .seconds(2))
        #expect(try receiver.received().attempts == attempts, "nothing is sent to a disabled endpoint")
        // Failing for longer than retry-for: dead letters.
        try receiver.control(["mode": "status", "status": 500])
        let revived = try HTTPAPITests.curl(base, "POST", "/webhooks/test/retry")
        #expect(revived.status == 200, "\(revived)")
        try await eventually("dead-lettered after retry-for", timeout: .seconds(30)) {
            let endpoint = try HTTPAPITests.curl(base, "GET", "/webhooks").json?["webhooks"]?[0]
            return endpoint?["dead"]?.intValue ?? 0 >= 1 && endpoint?["lastError"]?.stringValue?.contains("HTTP 500") == true
        }
        // Back: the dead ones go again on request.
        try receiver.control(["mode": "ok"])
        try await eventually("every dead letter revived and delivered", timeout: .seconds(60)) {
            _ = try HTTPAPITests.curl(base, "POST", "/webhooks/test/retry")
            return try receiver.appliedVersions(room: "counter") == [1, 2, 3]
        }
    }
}
