import Foundation
import Testing
import TetherProtocol
import TetherJSON
import TetherTestSupport

/// Garbage against the real daemon. `Scripts/test.sh` also runs this suite against an
/// AddressSanitizer build of `tetherd` (the `TETHERD` environment variable names the binary).
@Suite("End to end: hostile input", .serialized)
@MainActor
struct HostileInputTests {
    private func expectHealthy(_ daemon: Daemon, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(daemon.isRunning, "the daemon is alive", sourceLocation: sourceLocation)
        #expect(try daemon.httpGET("/healthz") == (200, "ok"), sourceLocation: sourceLocation)
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "counter"])
        #expect(try socket.receiveJSON()["type"] == "snapshot", sourceLocation: sourceLocation)
    }

    @Test func randomFramesAndInvalidUTF8() async throws {
        let daemon = try Daemon(arguments: ["--max-frame-bytes", "65536"])
        defer { daemon.stop() }
        var rng = SeededGenerator(seed: 6455)
        for round in 0..<200 {
            guard let socket = try? RawWebSocket(port: daemon.port) else { continue }
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                let length = [0, 1, 5, 125, 126, 200, 70_000].randomElement(using: &rng)!
                let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let opcode = UInt8.random(in: 0...15, using: &rng)
                try? socket.sendFrame(opcode: opcode, payload: payload, fin: Bool.random(using: &rng), masked: round % 7 != 0)
            }
            if round % 3 == 0 {  // invalid UTF-8 inside otherwise fine JSON
                try? socket.sendText(bytes: Array(#"{"type":"join","room":""#.utf8) + [0xF0, 0x28, 0x8C, 0xBC] + Array(#""}"#.utf8))
            }
            if round % 5 == 0 {  // raw bytes after the handshake, not even a frame
                try? socket.socket.write((0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) })
            }
        }
        try expectHealthy(daemon)
    }

    @Test func handshakesCutOffAndGarbageBeforeTheHandshake() async throws {
        let daemon = try Daemon(arguments: ["--handshake-timeout-seconds", "2"])
        defer { daemon.stop() }
        let request = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8)
        var sockets: [RawSocket] = []
        var rng = SeededGenerator(seed: 1)
        for cut in stride(from: 1, to: request.count, by: 7) {
            let socket = try RawSocket(port: daemon.port)
            try socket.write(Array(request[..<cut]))
            sockets.append(socket)
        }
        for _ in 0..<50 {
            let socket = try RawSocket(port: daemon.port)
            try? socket.write((0..<Int.random(in: 1...2048, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
            sockets.append(socket)
        }
        try expectHealthy(daemon)
        try await Task.sleep(for: .seconds(3))
        try expectHealthy(daemon)
        _ = sockets
    }

    @Test func tenThousandHalfOpenConnections() async throws {
        raiseOpenFileLimit()
        let daemon = try Daemon(arguments: ["--max-connections", "12000", "--handshake-timeout-seconds", "3"])
        defer { daemon.stop() }
        let rssBefore = daemon.residentBytes()
        var sockets: [RawSocket] = []
        sockets.reserveCapacity(10_000)
        for index in 0..<10_000 {
            let socket = try RawSocket(port: daemon.port)
            if index % 2 == 0 { try socket.write(Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)) }  // half a request
            sockets.append(socket)
        }
        try await Task.sleep(for: .milliseconds(500))
        let rssDuring = daemon.residentBytes()
        #expect(rssDuring - rssBefore < 200 << 20, "10,000 pending handshakes cost \((rssDuring - rssBefore) >> 20) MiB")
        try await eventually("pending handshakes time out", timeout: .seconds(30)) {
            (try? self.expectHealthy(daemon)) != nil
        }
        try expectHealthy(daemon)
        sockets.removeAll()
    }

    @Test func aFloodOfJoinsToNewRoomsIsBounded() async throws {
        let daemon = try Daemon(arguments: ["--max-rooms", "2000", "--max-rooms-per-connection", "100", "--memory-only"])
        defer { daemon.stop() }
        var joined = 0, refused = 0
        var sockets: [RawWebSocket] = []
        for connection in 0..<30 {
            let socket = try RawWebSocket(port: daemon.port)
            _ = try socket.receiveJSON()
            for room in 0..<100 {
                try socket.send(json: ["type": "join", "room": .string("counter:flood-\(connection)-\(room)")])
            }
            for _ in 0..<100 {
                let reply = try socket.receiveJSON()
                if reply["type"] == "snapshot" { joined += 1 } else if reply["code"] == "rate_limited" { refused += 1 }
            }
            sockets.append(socket)
        }
        #expect(joined == 2000)
        #expect(refused == 1000)
        let metrics = try daemon.httpGET("/metrics").body
        #expect(metrics.contains("tether_rooms 2000.0"))
        _ = sockets
    }
}

func raiseOpenFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
