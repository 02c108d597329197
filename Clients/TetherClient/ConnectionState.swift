import TetherProtocol
import TetherTransport

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

    /// Reconnecting after a failure that waiting may heal: nothing answers yet or the connection
    /// was closed during the handshake (a server starting or restarting), or a connection that
    /// was up dropped. False for one it will not heal: a host name that does not resolve, a
    /// failed TLS handshake, an HTTP answer.
    public var mayHealByWaiting: Bool {
        guard case .reconnecting(_, let reason) = self else { return false }
        return !reason.hasPrefix("cannot connect") || ConnectionFailure.mayHealByWaiting(reason)
    }

    public var isConnected: Bool {
        switch self {
        case .live, .resynced: return true
        default: return false
        }
    }
}

/// Why a request failed, and whether it may have been applied (`applied`). For an action the
/// answer is certain while the client lives (docs/CLIENTS.md, "Actions"): only `.closed` (and the
/// server's `stale_action`) leave it unknown.
public enum TetherClientError: Error, Equatable, CustomStringConvertible {
    /// The server answered with an error; its `applied` says whether the request changed anything.
    case server(ProtocolError)
    /// An action that was never sent (its time to be sent ran out, or the client closed first):
    /// not applied, and it never will be.
    case notSent(String)
    /// `ClientOptions.maxQueuedActions` actions are waiting already: this one was not queued.
    case queueFull(limit: Int)
    /// Not connected (`reason` says why): the request was not made, or its connection dropped
    /// before a request that is not an action (`describe`) was answered.
    case notConnected(String)
    /// No answer in time to a request that is not an action (`describe`, presence, room
    /// administration): it may have been applied.
    case timedOut
    /// An administration request (HTTP) failed on the way: it may have been applied.
    case requestFailed(String)
    /// `close()` was called while a sent action awaited its answer: it may have been applied.
    case closed

    /// Whether the failed request may have changed anything on the server.
    public var applied: ProtocolError.Applied {
        switch self {
        case .server(let error): return error.applied
        case .notSent, .queueFull, .notConnected: return .no
        case .timedOut, .requestFailed, .closed: return .unknown
        }
    }

    public var description: String {
        switch self {
        case .server(let error): return error.description
        case .notSent(let reason): return "not sent: \(reason)"
        case .queueFull(let limit): return "not sent: \(limit) actions are already waiting for the server"
        case .notConnected(let reason): return "not connected: \(reason)"
        case .timedOut: return "no answer from the server in time"
        case .requestFailed(let reason): return "the request failed: \(reason)"
        case .closed: return "the client was closed before the answer"
        }
    }
}
