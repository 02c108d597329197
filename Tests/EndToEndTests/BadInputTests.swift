import Foundation
import Testing
import TetherClient
import TetherProtocol
import TetherJSON
import TetherTestSupport

/// Every kind of bad input against the real daemon: each gets a clear error (or the documented
/// close code), nothing crashes, and a bystander's stream is untouched throughout.
@Suite("End to end: bad input", .serialized)
@MainActor
struct BadInputTests {
    private func expectError(_ socket: RawWebSocket, _ code: String, _ send: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try send()
        let reply = try socket.receiveJSON()
        #expect(reply["type"] == "error", sourceLocation: sourceLocation)
        #expect(reply["code"] == .string(code), "\(reply)", sourceLocation: sourceLocation)
        #expect(reply["message"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
    }

    @Test func everyErrorIsClearAndNobodyElseNotices() async throws {
        let daemon = try Daemon(arguments: ["--max-frame-bytes", "65536", "--test-kinds"])
        defer { daemon.stop() }

        // A bystander follows the counter while a writer changes it the whole time.
        let bystander = try await connectedClient(daemon)
        let writer = try await connectedClient(daemon)
        let watched = bystander.room("counter")
        var versions: [Int] = []
        let token = watched.observeChanges { change in
            if case .patch(let from, let version, _) = change { versions.append(from); versions.append(version) }
        }
        try await eventually { watched.isSynced }
        let writes = Task { @MainActor in
            for _ in 0..<40 {
                _ = try? await writer.send("increment", to: "counter")
                try? await Task.sleep(for: .milliseconds(20))
            }
        }

        // Garbage before the handshake, and a handshake cut off halfway.
        for garbage in [Array("\u{0}\u{1}\u{2}garbage\r\n\r\n".utf8), (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) }, Array("GET / HTTP/1.1\r\nUpgrade: websocket\r\n".utf8)] {
            let socket = try RawSocket(port: daemon.port)
            try socket.write(garbage)
        }

        let socket = try RawWebSocket(port: daemon.port)
        #expect(try socket.receiveJSON()["type"] == "hello")
        try expectError(socket, "bad_message") { try socket.sendText("this is not json") }
        try expectError(socket, "bad_message") { try socket.sendText(#"{"room":"counter"}"#) }
        try expectError(socket, "bad_message") { try socket.sendText(#"{"type":"join","room":42}"#) }
        try expectError(socket, "bad_message") { try socket.sendText(#"{"type":"teleport"}"#) }
        try expectError(socket, "bad_message") { try socket.sendBinary([1, 2, 3]) }
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        try expectError(socket, "bad_message") { try socket.sendText(#"{"type":"action","room":"counter","name":"increment","id":1,"args":{"x":"# + deep + "}}") }
        try expectError(socket, "unknown_room") { try socket.sendText(#"{"type":"join","room":"nowhere"}"#) }
        try expectError(socket, "unknown_action") { try socket.sendText(#"{"type":"action","room":"counter","name":"explode","id":2}"#) }
        try expectError(socket, "invalid_args") { try socket.sendText(#"{"type":"action","room":"counter","name":"increment","args":{"by":"two"},"id":3}"#) }
        try expectError(socket, "invalid_args") { try socket.sendText(#"{"type":"action","room":"counter","name":"increment","args":[2],"id":4}"#) }
        try expectError(socket, "internal") { try socket.sendText(#"{"type":"action","room":"faulty","name":"fail","id":5}"#) }
        // The connection is still fine after all that.
        try socket.send(json: ["type": "join", "room": "counter"])
        #expect(try socket.receiveJSON(until: { $0["type"] == "snapshot" })["room"] == "counter")

        // too_large: a room that would outgrow its limit.
        let filler = try await connectedClient(daemon)
        for i in 0..<1_000 { _ = try await filler.send("add", to: "todo:full", args: ["title": .string("item \(i)")]) }
        do {
            _ = try await filler.send("add", to: "todo:full", args: ["title": "one more"])
            Issue.record("the list grew past its limit")
        } catch TetherClientError.server(let error) {
            #expect(error.code == .tooLarge)
        }

        // A frame over the limit closes with 1009; invalid UTF-8 with 1007.
        let big = try RawWebSocket(port: daemon.port)
        _ = try big.receiveJSON()
        try big.sendText(#"{"type":"join","room":""# + String(repeating: "x", count: 70_000) + #""}"#)
        #expect(try big.receiveClose() == 1009)
        let utf8 = try RawWebSocket(port: daemon.port)
        _ = try utf8.receiveJSON()
        try utf8.sendText(bytes: Array(#"{"type":"join","room":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8))
        #expect(try utf8.receiveClose() == 1007)

        // Nothing but errors for long enough: closed with 1008.
        let noisy = try RawWebSocket(port: daemon.port)
        _ = try noisy.receiveJSON()
        for _ in 0..<60 { try? noisy.sendText("nope") }
        #expect(try noisy.receiveClose(timeout: .seconds(10)) == 1008)

        await writes.value
        // The bystander's stream stayed gapless and ends equal to a fresh snapshot.
        let fresh = try await connectedClient(daemon)
        let reference = fresh.room("counter")
        try await eventually { reference.isSynced }
        try await eventually("bystander caught up") { watched.version == reference.version }
        #expect(watched.state == reference.state)
        for pair in stride(from: 2, to: versions.count - 1, by: 2) {
            #expect(versions[pair] == versions[pair - 1], "patch \(pair / 2) starts where the previous ended")
        }
        #expect(reference.state["count"]!.intValue! >= 40)
        #expect(try daemon.httpGET("/healthz") == (200, "ok"))
        #expect(daemon.isRunning)
        token.cancel()
        for client in [bystander, writer, filler, fresh] { await client.close() }
        #expect(daemon.stop() == 0, "graceful exit after all of it; the daemon's last words: \(daemon.stderr.suffix(3000))")
    }

    @Test func healthAndMetricsOnTheSamePort() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        #expect(try daemon.httpGET("/healthz") == (200, "ok"))
        let client = try await connectedClient(daemon)
        try await client.send("increment", to: "counter")
        let metrics = try daemon.httpGET("/metrics")
        #expect(metrics.status == 200)
        for name in ["tether_connections", "tether_rooms", "tether_messages_received_total", "tether_bytes_received_total",
                     "tether_frames_sent_total", "tether_bytes_sent_total", #"tether_actions_total{outcome="ok"}"#,
                     "tether_patches_total", "tether_resumes_total", "tether_send_queue_overflows_total",
                     "tether_fanout_latency_seconds_bucket", "process_resident_memory_bytes"] {
            #expect(metrics.body.contains(name), "\(name) in /metrics")
        }
        #expect(metrics.body.contains(#"tether_actions_total{outcome="ok"} 1"#))
        #expect(try daemon.httpGET("/nothing-here").status == 404)
        await client.close()
    }

    @Test func sigtermClosesClientsWith1001AndExitsZero() async throws {
        let daemon = try Daemon()
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "clock"])
        #expect(try socket.receiveJSON()["type"] == "snapshot")
        kill(daemon.pid, SIGTERM)
        #expect(try socket.receiveClose(timeout: .seconds(10)) == 1001)
        #expect(daemon.stop() == 0)
    }
}
