import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// RFC 6455 conformance of the daemon's WebSocket side: each case of `serverConformanceCases`
/// on a connection of its own, against one daemon. `Scripts/test.sh` runs it against the
/// release and the AddressSanitizer builds too (`TETHERD` names the binary).
@Suite("End to end: RFC 6455 conformance (server)", .serialized)
struct WebSocketConformanceTests {
    @Test func everyCaseGivesItsOutcome() throws {
        let daemon = try Daemon(arguments: ["--max-frame-bytes", "\(conformanceMaxMessageBytes)", "--memory-only"])
        defer { daemon.stop() }
        for conformanceCase in serverConformanceCases {
            let observed = try observe(conformanceCase, port: daemon.port)
            #expect(observed == conformanceCase.expected, "\(conformanceCase): expected \(conformanceCase.expected), got \(observed)")
        }
        #expect(daemon.isRunning)
        #expect(try daemon.httpGET("/healthz") == (200, "ok"))
    }

    @Test func deviationsSayWhy() {
        for conformanceCase in serverConformanceCases {
            if let deviation = conformanceCase.deviation {
                #expect(deviation.tetherd != conformanceCase.rfc && !deviation.why.isEmpty, "\(conformanceCase)")
            }
        }
    }

    /// Sends the case's bytes (then the probe) on a fresh connection and reads until a close
    /// frame, the TCP close, or the probe's answer.
    private func observe(_ conformanceCase: ConformanceCase, port: Int) throws -> Outcome {
        let socket = try RawWebSocket(port: port)
        _ = try socket.receiveJSON()  // hello
        try socket.socket.write(conformanceCase.bytes)
        if conformanceCase.probe {
            try? socket.socket.write(WireFrame(WireFrame.text, request(id: 99)).bytes)
        }
        var answered: [Int] = [], pongs: [[UInt8]] = [], buffer: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            while let (frame, size) = WireFrame.parse(buffer) {
                buffer.removeFirst(size)
                switch frame.opcode {
                case WireFrame.close:
                    try? socket.socket.write(WireFrame(WireFrame.close, frame.payload.count >= 2 ? Array(frame.payload[..<2]) : []).bytes)
                    return .closes(frame.closeCode)
                case WireFrame.pong: pongs.append(frame.payload)
                case WireFrame.text:
                    if let id = (try? JSONParser().parse(frame.payload))?["id"]?.intValue {
                        if id == 99 { return .continues(answered: answered, pongs: pongs) }
                        answered.append(id)
                    }
                default: break
                }
            }
            guard let chunk = try? socket.socket.read(timeout: deadline - .now), !chunk.isEmpty else { break }
            buffer += chunk
        }
        return ContinuousClock.now < deadline ? .drops : .hangs
    }
}
