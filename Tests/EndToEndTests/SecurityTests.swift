import Foundation
import Testing
import TetherClient
import TetherProtocol
import TetherJSON
import TetherTestSupport

/// TLS, signed tokens and the per-connection limits, against the real daemon.
@Suite("End to end: TLS, tokens and limits", .serialized)
@MainActor
struct SecurityTests {
    nonisolated static func makeCertificate() throws -> (directory: String, cert: String, key: String) {
        let directory = Daemon.temporaryDirectory()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Scripts/make-cert.sh")
        let process = Process()
        process.executableURL = script
        process.arguments = [directory]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return (directory, directory + "/cert.pem", directory + "/key.pem")
    }

    /// Runs `tether ARGUMENTS` (a separate process: one TLS trust setting per process).
    private func tether(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = Daemon.executable("tether")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    @Test func wssWithATrustedCertificateAndInsecureMode() async throws {
        let tls = try Self.makeCertificate()
        let daemon = try Daemon(arguments: ["--tls-cert", tls.cert, "--tls-key", tls.key])
        defer { daemon.stop() }
        let url = "wss://127.0.0.1:\(daemon.port)"
        let trusted = try tether(["send", "--url", url, "--ca", tls.cert, "counter", "increment"])
        #expect(trusted.status == 0, "\(trusted.output)")
        #expect(trusted.output.contains(#""type":"ack""#))
        let insecure = try tether(["send", "--url", url, "--insecure", "counter", "increment"])
        #expect(insecure.status == 0, "\(insecure.output)")
        #expect(insecure.output.contains(#""version":2"#))
        // Without trusting the self-signed certificate the connection fails with a clear reason.
        let untrusted = try tether(["send", "--url", url, "counter", "increment"])
        #expect(untrusted.status == 1)
        #expect(untrusted.output.contains("cannot connect"), "\(untrusted.output)")
        // Plain ws:// to a TLS port fails too.
        #expect(try tether(["send", "--url", daemon.url, "counter", "increment"]).status == 1)
    }

    private func token(_ rooms: String, ttl: Int = 60, secret: String = "s3cret") throws -> String {
        let process = Process()
        process.executableURL = Daemon.executable("tetherd")
        process.arguments = ["token", "--secret", secret, "--subject", "tester", "--rooms", rooms, "--ttl", "\(ttl)"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func errorCode(_ socket: RawWebSocket, _ message: JSON) throws -> String? {
        try socket.send(json: message)
        let reply = try socket.receiveJSON(until: { $0["type"] == "error" || $0["type"] == "snapshot" || $0["type"] == "ack" })
        return reply["type"] == "error" ? reply["code"]?.stringValue : reply["type"]?.stringValue
    }

    @Test func joinsNeedAValidTokenCoveringTheRoom() async throws {
        let daemon = try Daemon(arguments: ["--auth-secret", "s3cret"])
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        let good = try token("todo:*,counter")
        #expect(try errorCode(socket, ["type": "join", "room": "counter"]) == "unauthorized", "no token")
        #expect(try errorCode(socket, ["type": "join", "room": "counter", "token": "not.a.token"]) == "unauthorized")
        #expect(try errorCode(socket, ["type": "join", "room": "counter", "token": .string(try token("counter", secret: "other"))]) == "unauthorized", "wrong secret")
        #expect(try errorCode(socket, ["type": "join", "room": "counter", "token": .string(try token("counter", ttl: -5))]) == "unauthorized", "expired")
        #expect(try errorCode(socket, ["type": "join", "room": "clock", "token": .string(good)]) == "unauthorized", "not covered")
        #expect(try errorCode(socket, ["type": "join", "room": "todo", "token": .string(good)]) == "unauthorized", "todo:* covers instances, not the bare kind")
        #expect(try errorCode(socket, ["type": "action", "room": "counter", "name": "increment", "id": 1]) == "unauthorized", "acting before joining")
        #expect(try errorCode(socket, ["type": "join", "room": "todo:team", "token": .string(good)]) == "snapshot")
        #expect(try errorCode(socket, ["type": "join", "room": "counter", "token": .string(good)]) == "snapshot")
        #expect(try errorCode(socket, ["type": "action", "room": "counter", "name": "increment", "id": 2]) == "ack")

        // The terminal client passes its token too.
        let sent = try tether(["send", "--url", daemon.url, "--token", good, "counter", "increment"])
        #expect(sent.status == 0, "\(sent.output)")
        let refused = try tether(["send", "--url", daemon.url, "--token", good, "clock", "increment"])
        #expect(refused.status == 2 && refused.output.contains("unauthorized"), "\(refused.output)")

        // The client library passes its token with every join.
        var options = ClientOptions(url: daemon.url, token: good)
        options.reconnect.isEnabled = false
        let client = TetherClient(options: options)
        try client.connect()
        try await client.waitUntilConnected()
        let counter = client.room("counter")
        try await eventually { counter.isSynced }
        #expect(try await counter.send("increment") >= 3)
        await client.close()
    }

    @Test func refusesToListenBeyondLoopbackWithoutAuth() throws {
        #expect(throws: DaemonError.self) { _ = try Daemon(arguments: ["--host", "0.0.0.0"], timeout: .seconds(5)) }
        let allowed = try Daemon(arguments: ["--host", "0.0.0.0", "--allow-anonymous"])
        allowed.stop()
    }

    @Test func actionsArePacedByATokenBucket() async throws {
        let daemon = try Daemon(arguments: ["--max-actions-per-second", "20", "--action-burst", "5"])
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        for id in 1...30 {
            try socket.send(json: ["type": "action", "room": "counter", "name": "increment", "id": .int(id)])
        }
        var acks = 0, limited = 0
        for _ in 1...30 {
            let reply = try socket.receiveJSON()
            if reply["type"] == "ack" { acks += 1 } else if reply["code"] == "rate_limited" { limited += 1 }
        }
        #expect(acks >= 5 && acks < 15, "\(acks) acks")
        #expect(acks + limited == 30)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try errorCode(socket, ["type": "action", "room": "counter", "name": "increment", "id": 99]) == "ack", "the bucket refills")
    }

    @Test func roomAndConnectionLimitsHaveClearErrors() async throws {
        let daemon = try Daemon(arguments: ["--max-rooms-per-connection", "3", "--max-rooms", "5", "--max-connections-per-ip", "4"])
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        for i in 0..<3 { #expect(try errorCode(socket, ["type": "join", "room": .string("counter:\(i)")]) == "snapshot") }
        #expect(try errorCode(socket, ["type": "join", "room": "counter:3"]) == "rate_limited")
        let other = try RawWebSocket(port: daemon.port)
        _ = try other.receiveJSON()
        #expect(try errorCode(other, ["type": "join", "room": "counter:3"]) == "snapshot")
        #expect(try errorCode(other, ["type": "join", "room": "counter:4"]) == "snapshot")
        // The flood stops at the server-wide bound, with a clear error; existing rooms still work.
        #expect(try errorCode(other, ["type": "join", "room": "counter:5"]) == "rate_limited")
        #expect(try errorCode(other, ["type": "action", "room": "counter:99", "name": "increment", "id": 1]) == "rate_limited")
        #expect(try errorCode(other, ["type": "action", "room": "counter:0", "name": "increment", "id": 2]) == "ack")
        // Two more connections from 127.0.0.1 fit, the fifth is closed with 1008.
        let third = try RawWebSocket(port: daemon.port), fourth = try RawWebSocket(port: daemon.port)
        _ = (try third.receiveJSON(), try fourth.receiveJSON())
        let fifth = try RawWebSocket(port: daemon.port)
        #expect(try fifth.receiveClose() == 1008)
    }

    @Test func deadPeersAreDroppedByKeepalive() async throws {
        let daemon = try Daemon(arguments: ["--ping-seconds", "1", "--peer-timeout-seconds", "3"])
        defer { daemon.stop() }
        let silent = try RawWebSocket(port: daemon.port)  // never reads, so never answers a ping
        _ = silent
        try await eventually("the server counts it") { (try? daemon.httpGET("/metrics").body.contains("tether_connections 1.0")) == true }
        try await eventually("the dead peer is dropped", timeout: .seconds(15)) {
            (try? daemon.httpGET("/metrics").body.contains("tether_connections 0.0")) == true
        }
    }

    @Test func anIdlePeerThatAnswersPingsStays() async throws {
        let daemon = try Daemon(arguments: ["--ping-seconds", "1", "--peer-timeout-seconds", "2"])
        defer { daemon.stop() }
        let idle = try RawWebSocket(port: daemon.port)
        _ = try idle.receiveJSON()
        var pings = 0
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(5) {
            // Pings are answered (with their payload) as they are read; the connection must outlive the timeout.
            if case .ping(let payload) = try idle.receiveFrame(timeout: .seconds(5), returnPings: true) {
                pings += 1
                try idle.sendFrame(opcode: 10, payload: payload)
            }
        }
        #expect(pings >= 3)
    }

    @Test func aHandshakeLeftHalfwayIsDropped() async throws {
        let daemon = try Daemon(arguments: ["--handshake-timeout-seconds", "2"])
        defer { daemon.stop() }
        let socket = try RawSocket(port: daemon.port)
        try socket.write(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n".utf8))
        let start = ContinuousClock.now
        _ = try? socket.readAll(timeout: .seconds(10))
        #expect(ContinuousClock.now - start < .seconds(8), "closed after the handshake timeout")
    }
}
