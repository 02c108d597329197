import Testing
import TetherTransport

/// Frames `PackedFrames` builds by hand, checked byte for byte and against zlib's inflater.
struct PackedFramesTests {
    /// The payloads of the frames in `bytes` (server frames: unmasked), with their RSV1 bits.
    private func frames(in bytes: [UInt8]) -> [(compressed: Bool, payload: [UInt8])] {
        var result: [(Bool, [UInt8])] = []
        var at = 0
        while at < bytes.count {
            let compressed = bytes[at] & 0x40 != 0
            var length = Int(bytes[at + 1] & 0x7F)
            at += 2
            if length == 126 {
                length = Int(bytes[at]) << 8 | Int(bytes[at + 1])
                at += 2
            } else if length == 127 {
                length = (0..<8).reduce(0) { $0 << 8 | Int(bytes[at + $1]) }
                at += 8
            }
            result.append((compressed, Array(bytes[at..<(at + length)])))
            at += length
        }
        return result
    }

    @Test func uncompressedFrameOnAPlainConnectionIsPlain() {
        var packed = PackedFrames()
        packed.appendUncompressed(Array("hi".utf8), deflateNegotiated: false)
        #expect(packed.bytes == [0x81, 2, UInt8(ascii: "h"), UInt8(ascii: "i")])
    }

    /// What zlib writes at level 0 with a sync flush, minus the 4-byte tail (`00 LEN NLEN data 00`).
    @Test func storedBlockMatchesZlibsOwn() {
        var packed = PackedFrames()
        let message = Array(#"{"type":"patch"}"#.utf8)
        packed.appendUncompressed(message, deflateNegotiated: true)
        let only = frames(in: packed.bytes)
        #expect(only.count == 1 && only[0].compressed)
        #expect(only.first?.payload == [0x00, 0x10, 0x00, 0xEF, 0xFF] + message + [0x00])
    }

    /// A receiver that keeps one inflater for the connection (context takeover on its side) reads
    /// every message, stored ones between compressed ones, and messages over one 65,535-byte block.
    @Test func oneInflaterReadsConsecutiveMessages() {
        let large = (0..<150_000).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        let messages = [Array("first".utf8), large, Array(#"{"type":"snapshot"}"#.utf8), Array("last".utf8)]
        var packed = PackedFrames()
        for (index, message) in messages.enumerated() {
            if index == 2, let compressed = MessageDeflater.compress(message) {
                packed.appendText(compressed, compressed: true)
            } else {
                packed.appendUncompressed(message, deflateNegotiated: true)
            }
        }
        let payloads = frames(in: packed.bytes)
        #expect(payloads.count == messages.count && payloads.allSatisfy(\.compressed))
        // One stream: each message followed by the tail the receiver appends (RFC 7692 7.2.2).
        let stream = payloads.dropLast().flatMap { $0.payload + [0x00, 0x00, 0xFF, 0xFF] } + (payloads.last?.payload ?? [])
        let expected = messages.flatMap { $0 }
        let inflated = MessageDeflater.decompress(stream)
        #expect(inflated?.count == expected.count)
        #expect(inflated.map { $0 == expected } == true)  // compared, not printed: 150 kB

    }
}
