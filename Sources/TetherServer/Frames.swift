import TetherProtocol
import TetherJSON

/// One version step of a room, encoded once and shared by every subscriber's queue and by the
/// room's history. `frame` is the complete `patch` message; `operations` is the range of its
/// encoded operations inside it, so merged patches concatenate them without re-encoding.
final class PatchFrame: Sendable {
    let room: String
    let epoch: String
    let from: Int
    let version: Int
    let frame: [UInt8]
    let operations: Range<Int>
    /// When the room produced it (for the fan-out latency histogram).
    let createdAt: ContinuousClock.Instant

    init(room: String, epoch: String, from: Int, version: Int, operations: [PatchOperation]) {
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
        self.operations = start..<(start + encoded.count)
        self.createdAt = .now
    }

    var byteCount: Int { frame.count }
    var encodedOperations: ArraySlice<UInt8> { frame[operations] }
}

/// A message waiting in a connection's send queue.
enum OutboundMessage {
    /// hello, ack, error: always sent, never merged.
    case control([UInt8])
    /// The whole state of a room at `version`; supersedes that room's queued messages.
    case snapshot(room: String, version: Int, frame: [UInt8])
    case patch(PatchFrame)

    var byteCount: Int {
        switch self {
        case .control(let bytes), .snapshot(_, _, let bytes): return bytes.count
        case .patch(let patch): return patch.byteCount
        }
    }

    var room: String? {
        switch self {
        case .control: return nil
        case .snapshot(let room, _, _): return room
        case .patch(let patch): return patch.room
        }
    }
}
