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
    public convenience init(room: String, epoch: String, from: Int, version: Int, operations: [PatchOperation], compressAbove: Int? = nil) {
        var encoded: [UInt8] = []
        JSONPatch.writeOperations(operations, to: &encoded)
        self.init(room: room, epoch: epoch, from: from, version: version, encodedOperations: encoded,
                  compressAbove: compressAbove, createdAt: .now)
    }

    /// `base`'s operations followed by `extra` (one viewer's own changes in the same version
    /// step): the base's encoded operations are copied, not encoded again.
    convenience init(extending base: PatchFrame, with extra: [PatchOperation], compressAbove: Int? = nil) {
        var encoded = Array(base.encodedOperations)
        if !encoded.isEmpty && !extra.isEmpty { encoded.append(UInt8(ascii: ",")) }
        JSONPatch.writeOperations(extra, to: &encoded)
        self.init(room: base.room, epoch: base.epoch, from: base.from, version: base.version, encodedOperations: encoded,
                  compressAbove: compressAbove, createdAt: base.createdAt)
    }

    /// The frame around operations already encoded (a comma-separated list): where patch frames are built.
    private init(room: String, epoch: String, from: Int, version: Int, encodedOperations encoded: [UInt8],
                 compressAbove: Int?, createdAt: ContinuousClock.Instant) {
        self.room = room
        self.epoch = epoch
        self.from = from
        self.version = version
        var frame: [UInt8] = []
        var start = 0
        ServerMessage.writePatch(room: room, epoch: epoch, from: from, version: version, to: &frame) { bytes in
            start = bytes.count
            bytes.append(contentsOf: encoded)
        }
        self.frame = frame
        self.compressedFrame = MessageDeflater.compress(frame, ifAtLeast: compressAbove)
        self.operations = start..<(start + encoded.count)
        self.createdAt = createdAt
    }

    /// A patch frame received whole (from a cluster's log): its bytes are shared as they came.
    /// nil when `frame` is not a patch frame as `ServerMessage.writePatch` writes them.
    init?(room: String, epoch: String, from: Int, version: Int, encodedFrame frame: [UInt8], compressAbove: Int? = nil) {
        let marker = Array(#","ops":["#.utf8)
        guard frame.count >= marker.count + 2, frame.suffix(2).elementsEqual("]}".utf8),
              let start = frame.firstRange(of: marker)?.upperBound else { return nil }
        self.room = room
        self.epoch = epoch
        self.from = from
        self.version = version
        self.frame = frame
        self.compressedFrame = MessageDeflater.compress(frame, ifAtLeast: compressAbove)
        self.operations = start..<(frame.count - 2)
        self.createdAt = .now
    }

    public var byteCount: Int { frame.count }

    /// Writes one patch frame for consecutive patches of one room and epoch, each continuing the
    /// previous: `from` of the first, `version` of the last, the operations concatenated as they
    /// were encoded. `buffer` is replaced, its storage reused.
    static func writeMerged(_ patches: some Sequence<PatchFrame>, from: Int, to version: Int, into buffer: inout [UInt8]) {
        var iterator = patches.makeIterator()
        guard let first = iterator.next() else { return }
        ServerMessage.writePatch(room: first.room, epoch: first.epoch, from: from, version: version, to: &buffer) { bytes in
            var needsComma = false
            var next: PatchFrame? = first
            while let patch = next {
                if !patch.operations.isEmpty {
                    if needsComma { bytes.append(UInt8(ascii: ",")) }
                    bytes.append(contentsOf: patch.encodedOperations)
                    needsComma = true
                }
                next = iterator.next()
            }
        }
    }
    var encodedOperations: ArraySlice<UInt8> { frame[operations] }
}
