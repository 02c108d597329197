import TetherProtocol

/// What a client's connection is doing, for a status bar.
public enum ConnectionState: Equatable, Sendable, CustomStringConvertible {
    /// The first connection attempt.
    case connecting
    /// Connected, and every room's mirror continues its stream.
    case live
    /// The connection dropped (or never came up); attempt `attempt` is scheduled.
    case reconnecting(attempt: Int, reason: String)
    /// Connected, but `room` lost continuity and was replaced by a fresh snapshot.
    case resynced(room: String)
    /// Closed for good (by `close()`, or a failure with reconnecting turned off).
    case closed(reason: String)

    public var description: String {
        switch self {
        case .connecting: return "connecting"
        case .live: return "live"
        case .reconnecting(let attempt, let reason): return "reconnecting (attempt \(attempt)): \(reason)"
        case .resynced(let room): return "resynced \(room) from snapshot"
        case .closed(let reason): return "closed: \(reason)"
        }
    }

    public var isConnected: Bool {
        switch self {
        case .live, .resynced: return true
        default: return false
        }
    }
}

public enum TetherClientError: Error, Equatable, CustomStringConvertible {
    /// The server answered with an error message.
    case server(ProtocolError)
    /// Not connected when sending, or the connection dropped before the ack (the action may or
    /// may not have been applied).
    case disconnected(String)
    case timedOut
    case closed

    public var description: String {
        switch self {
        case .server(let error): return error.description
        case .disconnected(let reason): return "disconnected: \(reason)"
        case .timedOut: return "no answer from the server in time"
        case .closed: return "the client was closed"
        }
    }
}
