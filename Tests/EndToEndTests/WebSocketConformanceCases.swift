import TetherTestSupport

/// What a server does with what a conformance case sent.
enum Outcome: Equatable, Sendable, CustomStringConvertible {
    /// A close frame carrying this code (nil: a close frame without one).
    case closes(UInt16?)
    /// The TCP connection closed with no close frame.
    case drops
    /// The connection stayed open: these request ids were answered and pings ponged with these
    /// payloads, in order (the probe that ends every case, id 99, is not listed).
    case continues(answered: [Int], pongs: [[UInt8]])
    /// Neither within 3 s (only ever observed: no case expects it).
    case hangs

    static let continues = Outcome.continues(answered: [], pongs: [])

    var description: String {
        switch self {
        case .closes(let code): return "close \(code.map(String.init) ?? "without a code")"
        case .drops: return "TCP drop, no close frame"
        case .continues(let answered, let pongs):
            return "open (answered \(answered), pongs of \(pongs.map(\.count)) bytes)"
        case .hangs: return "no close, no drop, no answer to the probe"
        }
    }
}

/// One line of the server's conformance table: bytes sent after a valid handshake, and the
/// outcome RFC 6455 asks for. A `deviation` says what tetherd does instead, and why.
struct ConformanceCase: CustomStringConvertible, Sendable {
    let name: String
    let section: String
    let bytes: [UInt8]
    let rfc: Outcome
    var deviation: (tetherd: Outcome, why: String)?
    /// The probe request (id 99) follows the case's bytes, unless the case sent a close.
    var probe = true

    var expected: Outcome { deviation?.tetherd ?? rfc }
    var description: String { "§\(section) \(name)" }
}

/// A request the daemon answers by id whatever state the connection is in.
func request(id: Int, room: String = "counter") -> [UInt8] {
    Array(#"{"type":"leave","room":"\#(room)","id":\#(id)}"#.utf8)
}

private func frame(_ opcode: UInt8, _ payload: [UInt8] = [], fin: Bool = true, rsv: UInt8 = 0, masked: Bool = true) -> [UInt8] {
    WireFrame(opcode, payload, fin: fin, rsv: rsv, mask: masked ? WireFrame.clientMask : nil).bytes
}

private func close(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
    frame(WireFrame.close, WireFrame.closePayload(code, reason))
}

/// `--max-frame-bytes` of the daemon the cases run against.
let conformanceMaxMessageBytes = 4096

/// RFC 6455's MUSTs for a server receiving frames, each with the close code it must give
/// (§7.4.1: 1002 protocol error, 1007 data not consistent with the message type, 1009 too big).
let serverConformanceCases: [ConformanceCase] = {
    let text = WireFrame.text, continuation = WireFrame.continuation
    let ping = WireFrame.ping, pong = WireFrame.pong
    let request1 = request(id: 1)
    let half = request1.count / 2
    let e = Array("é".utf8)  // two bytes, split across fragments below
    let splitRoom = request(id: 1, room: "counter:caf" + "é")
    let splitAt = splitRoom.firstIndex(of: e[0])! + 1
    let lwsDrops = "lws 4.1 fails the connection inside its frame parser, before any callback we get, and closes TCP without a close frame"
    return [
        // Well-formed traffic the server must accept.
        ConformanceCase(name: "a masked text frame is answered", section: "5.1", bytes: frame(text, request1),
                        rfc: .continues(answered: [1], pongs: [])),
        ConformanceCase(name: "a message in three fragments is answered", section: "5.4",
                        bytes: frame(text, Array(request1[..<5]), fin: false) + frame(continuation, Array(request1[5..<half]), fin: false)
                            + frame(continuation, Array(request1[half...])),
                        rfc: .continues(answered: [1], pongs: [])),
        ConformanceCase(name: "a ping between fragments is answered and the message handled", section: "5.4",
                        bytes: frame(text, Array(request1[..<half]), fin: false) + frame(ping, [7, 7]) + frame(continuation, Array(request1[half...])),
                        rfc: .continues(answered: [1], pongs: [[7, 7]])),
        ConformanceCase(name: "a ping of 125 bytes gets a pong with its payload", section: "5.5.2",
                        bytes: frame(ping, Array(repeating: 0x70, count: 125)),
                        rfc: .continues(answered: [], pongs: [Array(repeating: 0x70, count: 125)])),
        ConformanceCase(name: "an empty ping gets an empty pong", section: "5.5.2", bytes: frame(ping),
                        rfc: .continues(answered: [], pongs: [[]])),
        ConformanceCase(name: "an unsolicited pong is ignored", section: "5.5.3", bytes: frame(pong, [1, 2, 3]), rfc: .continues),
        ConformanceCase(name: "a UTF-8 character split across fragments is accepted", section: "5.6",
                        bytes: frame(text, Array(splitRoom[..<splitAt]), fin: false) + frame(continuation, Array(splitRoom[splitAt...])),
                        rfc: .continues(answered: [1], pongs: [])),

        // Framing errors: _Fail the WebSocket Connection_ (§7.1.7), with 1002.
        ConformanceCase(name: "an unmasked client frame", section: "5.1", bytes: frame(text, request1, masked: false),
                        rfc: .closes(1002),
                        deviation: (.continues(answered: [1], pongs: []),
                                    "lws 4.1 unmasks only when the mask bit is set and tells no callback whether it was")),
        ConformanceCase(name: "RSV1 set with no extension negotiated", section: "5.2", bytes: frame(text, request1, rsv: 0x40), rfc: .closes(1002)),
        ConformanceCase(name: "RSV2 set", section: "5.2", bytes: frame(text, request1, rsv: 0x20), rfc: .closes(1002)),
        ConformanceCase(name: "RSV3 set on a ping", section: "5.2", bytes: frame(ping, [1], rsv: 0x10), rfc: .closes(1002)),
        ConformanceCase(name: "reserved data opcode 3", section: "5.2", bytes: frame(3, [1]), rfc: .closes(1002)),
        ConformanceCase(name: "reserved data opcode 7", section: "5.2", bytes: frame(7), rfc: .closes(1002)),
        ConformanceCase(name: "reserved control opcode 0xB", section: "5.2", bytes: frame(0xB, [1]), rfc: .closes(1002)),
        ConformanceCase(name: "reserved control opcode 0xF", section: "5.2", bytes: frame(0xF), rfc: .closes(1002)),
        ConformanceCase(name: "a 64-bit length with its most significant bit set", section: "5.2",
                        bytes: [0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 5] + WireFrame.clientMask + [1, 2, 3, 4, 5],
                        rfc: .closes(1002), deviation: (.drops, lwsDrops)),
        ConformanceCase(name: "a continuation with no message started", section: "5.4", bytes: frame(continuation, request1),
                        rfc: .closes(1002)),
        ConformanceCase(name: "a new text frame inside a fragmented message", section: "5.4",
                        bytes: frame(text, Array(request1[..<half]), fin: false) + frame(text, request1), rfc: .closes(1002)),
        ConformanceCase(name: "a fragmented ping", section: "5.5", bytes: frame(ping, [1], fin: false) + frame(continuation, [2]),
                        rfc: .closes(1002)),
        ConformanceCase(name: "a ping of 126 bytes", section: "5.5", bytes: frame(ping, Array(repeating: 0x70, count: 126)),
                        rfc: .closes(1002), deviation: (.drops, lwsDrops)),
        ConformanceCase(name: "a close of 126 bytes", section: "5.5", bytes: close(1000, Array(repeating: 0x72, count: 124)),
                        rfc: .closes(1002), deviation: (.drops, lwsDrops), probe: false),

        // Text that is not UTF-8: 1007 (§8.1).
        ConformanceCase(name: "invalid UTF-8 in a text message", section: "8.1", bytes: frame(text, [0x61, 0xFF, 0xFE, 0x62]),
                        rfc: .closes(1007)),
        ConformanceCase(name: "invalid UTF-8 in the second fragment", section: "8.1",
                        bytes: frame(text, Array(request1[..<half]), fin: false) + frame(continuation, [0xC0, 0xAF] + request1[half...]),
                        rfc: .closes(1007)),
        ConformanceCase(name: "a text message ending inside a UTF-8 character", section: "8.1",
                        bytes: frame(text, Array("{\"a\":\"".utf8) + [0xE2, 0x82]), rfc: .closes(1007)),
        ConformanceCase(name: "a UTF-16 surrogate encoded in UTF-8", section: "8.1", bytes: frame(text, [0x22, 0xED, 0xA0, 0x80, 0x22]),
                        rfc: .closes(1007)),

        // Close frames (§5.5.1, §7.4).
        ConformanceCase(name: "close 1000 is echoed", section: "5.5.1", bytes: close(1000), rfc: .closes(1000), probe: false),
        ConformanceCase(name: "close 3000 is echoed", section: "7.4.2", bytes: close(3000), rfc: .closes(3000), probe: false),
        ConformanceCase(name: "close 4999 with a UTF-8 reason is echoed", section: "7.4.2", bytes: close(4999, Array("bye é".utf8)),
                        rfc: .closes(4999), probe: false),
        ConformanceCase(name: "an empty close is answered with a close", section: "5.5.1", bytes: frame(WireFrame.close),
                        rfc: .closes(nil), probe: false),
        ConformanceCase(name: "a close with a 1-byte payload", section: "5.5.1", bytes: frame(WireFrame.close, [0x03]),
                        rfc: .closes(1002), probe: false),
        ConformanceCase(name: "close code 999", section: "7.4.2", bytes: close(999), rfc: .closes(1002), probe: false),
        ConformanceCase(name: "close code 1004 (reserved)", section: "7.4.1", bytes: close(1004), rfc: .closes(1002), probe: false),
        ConformanceCase(name: "close code 1005 (never sent)", section: "7.4.1", bytes: close(1005), rfc: .closes(1002), probe: false),
        ConformanceCase(name: "close code 1006 (never sent)", section: "7.4.1", bytes: close(1006), rfc: .closes(1002), probe: false),
        ConformanceCase(name: "close code 1015 (never sent)", section: "7.4.1", bytes: close(1015), rfc: .closes(1002), probe: false),
        ConformanceCase(name: "close code 2999 (unassigned)", section: "7.4.2", bytes: close(2999), rfc: .closes(1002), probe: false),
        ConformanceCase(name: "a close reason that is not UTF-8", section: "5.5.1", bytes: close(1000, [0x62, 0xFF, 0x65]),
                        rfc: .closes(1007), probe: false),

        // Limits (§10.4): a message over --max-frame-bytes closes with 1009.
        ConformanceCase(name: "a frame over the maximum message size", section: "10.4",
                        bytes: frame(text, Array(repeating: 0x20, count: conformanceMaxMessageBytes + 1)), rfc: .closes(1009)),
        ConformanceCase(name: "fragments adding up to over the maximum message size", section: "10.4",
                        bytes: frame(text, Array(repeating: 0x20, count: conformanceMaxMessageBytes), fin: false)
                            + frame(continuation, [0x20]),
                        rfc: .closes(1009)),
    ]
}()
