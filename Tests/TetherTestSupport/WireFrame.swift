/// One WebSocket frame laid out by hand as RFC 6455 §5.2 draws it, for the conformance suites:
/// every bit can be set wrong on purpose, and frames are read back masked or not (a library
/// would refuse to build, or to show, most of what these tests need).
public struct WireFrame: Equatable, Sendable {
    public var fin: Bool
    /// RSV1, RSV2, RSV3 as the frame's bits 0x40, 0x20, 0x10.
    public var rsv: UInt8
    public var opcode: UInt8
    public var payload: [UInt8]
    /// The masking key; nil for an unmasked frame.
    public var mask: [UInt8]?

    public static let text: UInt8 = 0x1, binary: UInt8 = 0x2, continuation: UInt8 = 0x0
    public static let close: UInt8 = 0x8, ping: UInt8 = 0x9, pong: UInt8 = 0xA
    /// A client's key (any 4 bytes do; not all zero, so unmasking shows).
    public static let clientMask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    public init(_ opcode: UInt8, _ payload: [UInt8] = [], fin: Bool = true, rsv: UInt8 = 0, mask: [UInt8]? = WireFrame.clientMask) {
        self.opcode = opcode
        self.payload = payload
        self.fin = fin
        self.rsv = rsv
        self.mask = mask
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | rsv | (opcode & 0x0F)]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        if payload.count < 126 {
            out.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        guard let mask else { return out + payload }
        return out + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }

    /// A close frame's status code (§5.5.1), nil when its payload has none.
    public var closeCode: UInt16? {
        payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
    }

    /// A close frame's payload: the code, then the reason's bytes as given (UTF-8 or not).
    public static func closePayload(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
        [UInt8(code >> 8), UInt8(code & 0xFF)] + reason
    }

    /// The first whole frame at the start of `buffer` (unmasked for reading) and how many bytes
    /// it took; nil while it is incomplete.
    public static func parse(_ buffer: [UInt8]) -> (frame: WireFrame, size: Int)? {
        guard buffer.count >= 2 else { return nil }
        var length = Int(buffer[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard buffer.count >= 4 else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            offset = 4
        } else if length == 127 {
            guard buffer.count >= 10 else { return nil }
            length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
            offset = 10
        }
        var mask: [UInt8]?
        if buffer[1] & 0x80 != 0 {
            guard buffer.count >= offset + 4 else { return nil }
            mask = Array(buffer[offset..<(offset + 4)])
            offset += 4
        }
        guard length >= 0, buffer.count >= offset + length else { return nil }
        var payload = Array(buffer[offset..<(offset + length)])
        if let mask { payload = payload.enumerated().map { $0.element ^ mask[$0.offset & 3] } }
        let frame = WireFrame(buffer[0] & 0x0F, payload, fin: buffer[0] & 0x80 != 0, rsv: buffer[0] & 0x70, mask: mask)
        return (frame, offset + length)
    }
}
