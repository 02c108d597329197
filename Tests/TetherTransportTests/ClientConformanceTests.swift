import Foundation
import Testing
@testable import TetherTransport
import TetherTestSupport

/// What our client transport does with what a case's server sent, as that server sees it.
enum ClientOutcome: Equatable, CustomStringConvertible {
    /// The client sent a close frame with this code (nil: none in it).
    case closes(UInt16?)
    /// The client closed TCP without a close frame.
    case drops
    /// The connection stayed open: these texts reached the delegate, and the client ponged
    /// these payloads (the probe text that ends a case is not listed).
    case continues(delivered: [String], pongs: [[UInt8]])
    /// Neither within 3 s (only ever observed).
    case hangs

    var description: String {
        switch self {
        case .closes(let code): return "close \(code.map(String.init) ?? "without a code")"
        case .drops: return "TCP drop, no close frame"
        case .continues(let delivered, let pongs): return "open (delivered \(delivered), pongs of \(pongs.map(\.count)) bytes)"
        case .hangs: return "no close, no drop, no probe delivered"
        }
    }
}

/// One line of the client's table: what a server sends after the handshake, and what RFC 6455
/// makes a client do; `deviation` is what ours does instead, and why.
struct ClientCase: CustomStringConvertible, Sendable {
    let name: String
    let section: String
    let bytes: [UInt8]
    let rfc: ClientOutcome
    var deviation: (client: ClientOutcome, why: String)?
    /// An unmasked text "probe" follows the case's bytes, unless the case sent a close.
    var probe = true

    var expected: ClientOutcome { deviation?.client ?? rfc }
    var description: String { "§\(section) \(name)" }
}

private func frame(_ opcode: UInt8, _ payload: [UInt8] = [], fin: Bool = true, rsv: UInt8 = 0, masked: Bool = false) -> [UInt8] {
    WireFrame(opcode, payload, fin: fin, rsv: rsv, mask: masked ? WireFrame.clientMask : nil).bytes
}

private func close(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
    frame(WireFrame.close, WireFrame.closePayload(code, reason))
}

private let clientMaxMessageBytes = 4096

/// RFC 6455's MUSTs for a client receiving frames, as for the server but the other way: server
/// frames must not be masked (§5.1).
let clientConformanceCases: [ClientCase] = {
    let text = WireFrame.text, continuation = WireFrame.continuation, ping = WireFrame.ping
    let hello = Array("hello".utf8)
    let lwsDrops = "lws 4.1's client parser fails the connection before any callback we get, and closes TCP without a close frame"
    return [
        ClientCase(name: "an unmasked text frame is delivered", section: "5.1", bytes: frame(text, hello),
                   rfc: .continues(delivered: ["hello"], pongs: [])),
        ClientCase(name: "a message in two fragments is delivered", section: "5.4",
                   bytes: frame(text, Array(hello[..<2]), fin: false) + frame(continuation, Array(hello[2...])),
                   rfc: .continues(delivered: ["hello"], pongs: [])),
        ClientCase(name: "a ping between fragments is answered and the message delivered", section: "5.4",
                   bytes: frame(text, Array(hello[..<2]), fin: false) + frame(ping, [7]) + frame(continuation, Array(hello[2...])),
                   rfc: .continues(delivered: ["hello"], pongs: [[7]])),
        ClientCase(name: "a ping of 125 bytes gets a pong with its payload", section: "5.5.2",
                   bytes: frame(ping, Array(repeating: 0x70, count: 125)),
                   rfc: .continues(delivered: [], pongs: [Array(repeating: 0x70, count: 125)])),
        ClientCase(name: "an unsolicited pong is ignored", section: "5.5.3", bytes: frame(WireFrame.pong, [1]),
                   rfc: .continues(delivered: [], pongs: [])),
        ClientCase(name: "a UTF-8 character split across fragments is delivered", section: "5.6",
                   bytes: frame(text, [0x63, 0xC3], fin: false) + frame(continuation, [0xA9]),
                   rfc: .continues(delivered: ["cé"], pongs: [])),

        ClientCase(name: "a masked server frame", section: "5.1", bytes: frame(text, hello, masked: true), rfc: .closes(1002),
                   deviation: (.continues(delivered: ["hello"], pongs: []),
                               "lws 4.1's client parser unmasks a masked frame and tells no callback that it was masked")),
        ClientCase(name: "RSV1 set with no extension negotiated", section: "5.2", bytes: frame(text, hello, rsv: 0x40), rfc: .closes(1002), deviation: (.drops, lwsDrops)),
        ClientCase(name: "reserved data opcode 3", section: "5.2", bytes: frame(3, [1]), rfc: .closes(1002), deviation: (.drops, lwsDrops)),
        ClientCase(name: "reserved control opcode 0xB", section: "5.2", bytes: frame(0xB, [1]), rfc: .closes(1002), deviation: (.drops, lwsDrops)),
        ClientCase(name: "a continuation with no message started", section: "5.4", bytes: frame(continuation, hello), rfc: .closes(1002), deviation: (.drops, lwsDrops)),
        ClientCase(name: "a fragmented ping", section: "5.5", bytes: frame(ping, [1], fin: false) + frame(continuation, [2]),
                   rfc: .closes(1002), deviation: (.drops, lwsDrops)),
        ClientCase(name: "a ping of 126 bytes", section: "5.5", bytes: frame(ping, Array(repeating: 0x70, count: 126)), rfc: .closes(1002), deviation: (.drops, lwsDrops)),

        ClientCase(name: "invalid UTF-8 in a text message", section: "8.1", bytes: frame(text, [0x61, 0xFF, 0x62]), rfc: .closes(1007)),
        ClientCase(name: "a text message ending inside a UTF-8 character", section: "8.1", bytes: frame(text, [0x61, 0xE2, 0x82]),
                   rfc: .closes(1007)),

        ClientCase(name: "close 1000 is echoed", section: "5.5.1", bytes: close(1000), rfc: .closes(1000), probe: false),
        ClientCase(name: "a close with a 1-byte payload", section: "5.5.1", bytes: frame(WireFrame.close, [0x03]), rfc: .closes(1002), probe: false),
        ClientCase(name: "close code 999", section: "7.4.2", bytes: close(999), rfc: .closes(1002), probe: false),
        ClientCase(name: "close code 1005 (never sent)", section: "7.4.1", bytes: close(1005), rfc: .closes(1002), probe: false),
        ClientCase(name: "a close reason that is not UTF-8", section: "5.5.1", bytes: close(1000, [0x62, 0xFF]), rfc: .closes(1007), probe: false),

        ClientCase(name: "a message over the client's maximum size", section: "10.4",
                   bytes: frame(text, Array(repeating: 0x20, count: clientMaxMessageBytes + 1)), rfc: .closes(1009)),
    ]
}()

/// RFC 6455 conformance of our client transport (`WebSocketClient`) against a server written by
/// hand that sends each case's frames.
@Suite("TetherTransport: RFC 6455 conformance (client)", .serialized, .timeLimit(.minutes(2)))
struct ClientConformanceTests {
    @Test func everyCaseGivesItsOutcome() async throws {
        let server = try RawWebSocketServer()
        let client = try startClient { $0.maxMessageBytes = clientMaxMessageBytes }
        defer { client.shutdown() }
        for clientCase in clientConformanceCases {
            let recorder = RecordingClient()
            try client.connect(url: "ws://127.0.0.1:\(server.port)/", delegate: recorder)
            let socket = try server.acceptWebSocket()
            try await eventually("\(clientCase): connected") { recorder.connected || recorder.finished }
            let (observed, unmasked) = try observe(clientCase, socket: socket, recorder: recorder)
            #expect(observed == clientCase.expected, "\(clientCase): expected \(clientCase.expected), got \(observed)")
            #expect(unmasked == 0, "\(clientCase): the client sent \(unmasked) unmasked frames")
            if case .continues = observed { continue }
            try await eventually("\(clientCase): the delegate heard of the close") { recorder.finished }
            #expect(recorder.state.current.texts.isEmpty, "\(clientCase): nothing reaches the delegate")
        }
    }

    @Test func deviationsSayWhy() {
        for clientCase in clientConformanceCases {
            if let deviation = clientCase.deviation {
                #expect(deviation.client != clientCase.rfc && !deviation.why.isEmpty, "\(clientCase)")
            }
        }
    }

    /// Sends the case (then the probe) and reads what the client answers until its close frame,
    /// its TCP close, or the probe's delivery; also counts client frames sent unmasked.
    private func observe(_ clientCase: ClientCase, socket: RawSocket, recorder: RecordingClient) throws -> (ClientOutcome, Int) {
        try socket.write(clientCase.bytes)
        if clientCase.probe { try? socket.write(frame(WireFrame.text, Array("probe".utf8))) }
        var pongs: [[UInt8]] = [], buffer: [UInt8] = [], unmasked = 0
        var probeDelivered: ContinuousClock.Instant?
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            while let (frame, size) = WireFrame.parse(buffer) {
                buffer.removeFirst(size)
                if frame.mask == nil { unmasked += 1 }
                if frame.opcode == WireFrame.close {
                    try? socket.write(frame.payload.count >= 2 ? close(frame.closeCode!) : close(1000))
                    return (.closes(frame.closeCode), unmasked)
                }
                if frame.opcode == WireFrame.pong { pongs.append(frame.payload) }
            }
            let texts = recorder.state.current.texts
            if let probe = texts.firstIndex(of: "probe") {
                // A pong is written after the probe may have been delivered: wait a moment for it.
                if probeDelivered == nil { probeDelivered = .now }
                if let probeDelivered, ContinuousClock.now - probeDelivered > .milliseconds(200) {
                    return (.continues(delivered: Array(texts[..<probe]), pongs: pongs), unmasked)
                }
            }
            do {
                let chunk = try socket.read(timeout: .milliseconds(20))
                if chunk.isEmpty { return (.drops, unmasked) }
                buffer += chunk
            } catch RawSocketError.timedOut {
                continue
            } catch {
                return (.drops, unmasked)
            }
        }
        return (.hangs, unmasked)
    }
}
