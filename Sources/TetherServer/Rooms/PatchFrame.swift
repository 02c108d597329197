import TetherProtocol
import TetherJSON
import TetherTransport

/// One version step of a room, encoded once and shared by every subscriber's queue and by the
/// room's history. `frame` is the complete `patch` message; `operations` is the range of its
/// encoded operations inside it, so merged patches concatenate them without re-encoding.
public final class PatchFrame: Sendable {
    public let room: String
    public let epoch: String
    public let from: Int
    public let version: Int
    public let frame: [UInt8]
    /// The frame as a permessage-deflate message, compressed once here for every subscriber that
    /// negotiated compression; nil when compression is off, the frame is under the threshold,
    /// or compressing did not make it smaller.
    public let compressedFrame: [UInt8]?
    let operations: Range<Int>
    /// When the room produced it (for the fan-out latency histogram).
    let createdAt: ContinuousClock.Instant

    /// `compressAbove`: compress the frame when it has at least this many bytes (nil: never).
    public init(room: String, epoch: String, from: Int, version: Int, operations: [PatchOperation], compressAbove: Int? = nil) {
        self.room = room
        self.epoch = epoch
        self.from = from
        self.version = version
        var encoded: [UInt8] = []
        JSONPatch.writeOperations(operations, to: &encoded)
        var frame: [UInt8] = []
        var start = 0
        ServerMessage.writePatch(room: room, epoch: epoch, from: from, version: version, to: &frame) { bytes in
            start = bytes.count
            bytes.append(contentsOf: encoded)
        }
        self.frame = frame
        self.compressedFrame = compressAbove.flatMap { frame.count >= $0 ? MessageDeflater.compress(frame) : nil }
        self.operations = start..<(start + encoded.count)
        self.createdAt = .now
    }

    public var byteCount: Int { frame.count }
    var encodedOperations: ArraySlice<UInt8> { frame[operations] }
}
