import TetherProtocol

/// A message waiting in a connection's send queue.
public enum OutboundMessage: Sendable {
    /// hello, ack, error: always sent, never merged.
    case control([UInt8])
    /// The whole state of a room at `version`; supersedes that room's queued messages.
    /// `compressed`: the same frame as a permessage-deflate message, made once by the room when
    /// compression is on and the frame is large enough (sent to clients that negotiated it).
    case snapshot(room: String, version: Int, frame: [UInt8], compressed: [UInt8]? = nil)
    case patch(PatchFrame)

    public var byteCount: Int {
        switch self {
        case .control(let bytes), .snapshot(_, _, let bytes, _): return bytes.count
        case .patch(let patch): return patch.byteCount
        }
    }

    public var room: String? {
        switch self {
        case .control: return nil
        case .snapshot(let room, _, _, _): return room
        case .patch(let patch): return patch.room
        }
    }
}
