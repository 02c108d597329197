/// Server-to-client WebSocket text frames, headers included, one after the other in one buffer,
/// so that a connection sends everything it has queued with one write: one `send()` (or one
/// `SSL_write`) for many frames instead of one per frame. `WebSocketConnection.send(_:)` writes
/// the buffer as raw bytes; lws's own framing state is untouched, because every frame in it is
/// complete (see `WebSocketConnection.send(_:)`).
///
/// Frames are unmasked (server to client only). A frame appended with `compressed: true` carries
/// RSV1: its payload must be a permessage-deflate message (`MessageDeflater`), and the connection
/// must have negotiated the extension.
public struct PackedFrames: Sendable {
    public private(set) var bytes: [UInt8] = []
    public private(set) var frameCount = 0

    public init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    public var isEmpty: Bool { frameCount == 0 }
    public var byteCount: Int { bytes.count }

    /// Empties the buffer, keeping its storage for the next batch.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        frameCount = 0
    }

    /// Appends one complete text frame (FIN) carrying `payload`.
    public mutating func appendText(_ payload: UnsafeRawBufferPointer, compressed: Bool = false) {
        appendHeader(length: payload.count, compressed: compressed)
        bytes.append(contentsOf: payload)
        frameCount += 1
    }

    public mutating func appendText(_ payload: [UInt8], compressed: Bool = false) {
        payload.withUnsafeBytes { appendText($0, compressed: compressed) }
    }

    /// Appends `payload` uncompressed to a connection that negotiated permessage-deflate, or not:
    /// for such a connection as deflate "stored" blocks in an RSV1 frame (5 bytes more per 65,535
    /// and one at the end, no compression work), else as a plain frame. The bytes are what zlib
    /// writes at level 0 with a sync flush, minus the 4-byte tail the receiver appends, so a
    /// receiver that keeps its inflater across messages stays in step. libwebsockets 4.1's client, once the extension
    /// is active, delivers a text frame without RSV1 to its callback again and again without end
    /// (warmcat/libwebsockets#2794): marking every data frame compressed keeps such clients working.
    public mutating func appendUncompressed(_ payload: [UInt8], deflateNegotiated: Bool) {
        guard deflateNegotiated else { return appendText(payload) }
        let blockSize = 65_535
        let blocks = max(1, (payload.count + blockSize - 1) / blockSize)
        appendHeader(length: payload.count + 5 * blocks + 1, compressed: true)
        var offset = 0
        repeat {
            let length = min(blockSize, payload.count - offset)
            let complement = UInt16(length) ^ 0xFFFF
            // BFINAL 0, BTYPE 00 (stored), then LEN and NLEN, little-endian.
            bytes.append(0x00)  // one append per byte: an array literal here would allocate per frame
            bytes.append(UInt8(length & 0xFF))
            bytes.append(UInt8(length >> 8))
            bytes.append(UInt8(complement & 0xFF))
            bytes.append(UInt8(complement >> 8))
            bytes.append(contentsOf: payload[offset..<(offset + length)])
            offset += length
        } while offset < payload.count
        bytes.append(0x00)  // the sync flush's empty stored block, completed by the receiver's 00 00 FF FF
        frameCount += 1
    }

    private mutating func appendHeader(length: Int, compressed: Bool) {
        bytes.append(0x80 | (compressed ? 0x40 : 0) | 0x1)  // FIN, RSV1 when compressed, text
        if length < 126 {
            bytes.append(UInt8(length))
        } else if length < 65_536 {
            bytes.append(126)
            bytes.append(UInt8(truncatingIfNeeded: length >> 8))
            bytes.append(UInt8(truncatingIfNeeded: length))
        } else {
            bytes.append(127)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: length >> shift))
            }
        }
    }

    /// Calls `body` with each frame's payload and whether it is compressed, in order (for
    /// connections that are not sockets, e.g. in-memory test connections).
    public func forEachFrame(_ body: (_ payload: UnsafeRawBufferPointer, _ compressed: Bool) -> Void) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset + 2 <= buffer.count {
                let first = buffer[offset]
                var length = Int(buffer[offset + 1] & 0x7f)
                offset += 2
                if length == 126 {
                    length = Int(buffer[offset]) << 8 | Int(buffer[offset + 1])
                    offset += 2
                } else if length == 127 {
                    length = 0
                    for i in 0..<8 { length = length << 8 | Int(buffer[offset + i]) }
                    offset += 8
                }
                body(UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)]), first & 0x40 != 0)
                offset += length
            }
        }
    }
}
