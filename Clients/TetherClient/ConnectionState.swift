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

/// Why a request failed, and whether it may have been applied (`applied`): a retry after
/// `.no` is safe; after `.unknown` it may apply the request a second time.
public enum TetherClientError: Error, Equatable, CustomStringConvertible {
    /// The server answered with an error; its `applied` says whether the request changed anything.
    case server(ProtocolError)
    /// Not connected, so nothing was sent and nothing applied (`reason` says why: the failed
    /// connection, or the state the client is in).
    case notConnected(String)
    /// The connection dropped after the request was sent, before its answer: it may have been applied.
    case disconnected(String)
    /// No answer within `ClientOptions.actionTimeout`: it may have been applied.
    case timedOut
    /// `close()` was called while the answer was awaited: it may have been applied.
    case closed

    /// Whether the failed request may have changed anything on the server.
    public var applied: ProtocolError.Applied {
        switch self {
        case .server(let error): return error.applied
        case .notConnected: return .no
        case .disconnected, .timedOut, .closed: return .unknown
        }
    }

    public var description: String {
        switch self {
        case .server(let error): return error.description
        case .notConnected(let reason): return "not connected: \(reason)"
        case .disconnected(let reason): return "the connection dropped before the answer: \(reason)"
        case .timedOut: return "no answer from the server in time"
        case .closed: return "the client was closed before the answer"
        }
    }
}
