import TetherJSON
import TetherProtocol

/// An action `send` has not had an answer for yet: queued, or sent and awaiting its answer.
public struct PendingAction: Equatable, Sendable {
    public let room: String
    public let name: String
    /// Its number: the server runs each number of this client once.
    public let seq: Int
    /// Sent at least once (it may be waiting to go again after a lost connection).
    public let isSent: Bool
}

/// The client's actions from `send` to their answer (docs/CLIENTS.md, "Actions"): numbered, in
/// order, each sent while the connection is live and its number is inside the window, sent again
/// under the same number after a lost connection or an answer that settles nothing. It keeps no
/// clock and no socket: `TetherClient` asks it what to send and tells it what happened.
struct ActionQueue {
    /// Numbers in flight, from the oldest unanswered one: the outcomes a room remembers per
    /// client, so a resend is always one the room still knows.
    static let window = 64
    static let firstRetryDelay: Duration = .milliseconds(250)
    static let maximumRetryDelay: Duration = .seconds(5)

    struct Action {
        let seq: Int
        let room: String
        let name: String
        let args: JSON?
        /// The id of the frame carrying it on the current connection; nil while it waits to be (re)sent.
        var requestID: Int?
        var wasSent = false
        /// An earlier send may have applied it: it went unanswered on a lost connection, or the
        /// answer said "unknown". A later `unavailable` or `rate_limited` then settles nothing.
        var mayHaveBeenApplied = false
        /// Sends that settled nothing so far, for the pause before the next.
        var retries = 0
        /// Not resent before then (after an answer that settled nothing).
        var notBefore: ContinuousClock.Instant?
    }

    /// What an answer does to the action it answers.
    enum Outcome {
        case acknowledged(Action, version: Int)
        case failed(Action, ProtocolError)
        /// The answer settles nothing: sent again from `at` on.
        case retry(at: ContinuousClock.Instant)
    }

    let capacity: Int
    /// Unanswered, in number order.
    private(set) var actions: [Action] = []
    private var nextSeq = 1

    init(capacity: Int) {
        self.capacity = capacity
    }

    var pending: [PendingAction] {
        actions.map { PendingAction(room: $0.room, name: $0.name, seq: $0.seq, isSent: $0.wasSent) }
    }

    /// Numbers a new action; throws `.queueFull` when `capacity` actions are unanswered.
    mutating func add(room: String, name: String, args: JSON?) throws(TetherClientError) -> Int {
        guard actions.count < capacity else { throw .queueFull(limit: capacity) }
        let seq = nextSeq
        nextSeq += 1
        actions.append(Action(seq: seq, room: room, name: name, args: args))
        return seq
    }

    /// The actions to send now, in number order, each given a request id by `nextRequestID`:
    /// those not on the connection, inside the window, and not pausing before a resend.
    mutating func take(now: ContinuousClock.Instant, nextRequestID: () -> Int) -> [Action] {
        guard let oldest = actions.first?.seq else { return [] }
        var taken: [Action] = []
        for index in actions.indices {
            let action = actions[index]
            guard action.seq < oldest + Self.window else { break }
            guard action.requestID == nil, action.notBefore.map({ $0 <= now }) ?? true else { continue }
            actions[index].requestID = nextRequestID()
            actions[index].wasSent = true
            actions[index].notBefore = nil
            taken.append(actions[index])
        }
        return taken
    }

    /// The earliest instant a pausing action may go again.
    var nextRetry: ContinuousClock.Instant? {
        actions.compactMap { $0.requestID == nil ? $0.notBefore : nil }.min()
    }

    /// The ack for request `requestID`; nil when no action waits for it.
    mutating func acknowledge(requestID: Int, version: Int) -> Outcome? {
        guard let index = actions.firstIndex(where: { $0.requestID == requestID }) else { return nil }
        return .acknowledged(actions.remove(at: index), version: version)
    }

    /// The error answering request `requestID`: it settles the action (removed), or the action
    /// goes again after a pause (docs/PROTOCOL.md, "What an answer settles"). Nil when no action
    /// waits for it.
    mutating func fail(requestID: Int, _ error: ProtocolError, now: ContinuousClock.Instant) -> Outcome? {
        guard let index = actions.firstIndex(where: { $0.requestID == requestID }) else { return nil }
        var action = actions[index]
        guard !Self.settles(error, mayHaveBeenApplied: action.mayHaveBeenApplied) else {
            return .failed(actions.remove(at: index), error)
        }
        action.requestID = nil
        action.mayHaveBeenApplied = action.mayHaveBeenApplied || error.applied != .no
        let delay = min(Self.firstRetryDelay * (1 << min(action.retries, 8)), Self.maximumRetryDelay)
        action.retries += 1
        action.notBefore = now + delay
        actions[index] = action
        return .retry(at: now + delay)
    }

    /// Whether `error` tells what became of the action: `stale_action` does, finally (the room
    /// cannot tell more); "unknown" does not; `unavailable` and `rate_limited` speak of this send
    /// only, so they settle nothing when an earlier one may have been applied.
    static func settles(_ error: ProtocolError, mayHaveBeenApplied: Bool) -> Bool {
        if error.code == .staleAction { return true }
        if error.applied == .unknown { return false }
        if mayHaveBeenApplied, error.code == .unavailable || error.code == .rateLimited { return false }
        return true
    }

    /// The connection is gone: what was on it waits to be sent again, and may have been applied.
    mutating func connectionLost() {
        for index in actions.indices where actions[index].requestID != nil {
            actions[index].requestID = nil
            actions[index].mayHaveBeenApplied = true
        }
    }

    /// Removes action `seq` if it was never sent (its time to be sent ran out); a sent action stays
    /// until it is answered.
    mutating func expire(seq: Int) -> Action? {
        guard let index = actions.firstIndex(where: { $0.seq == seq }), !actions[index].wasSent else { return nil }
        return actions.remove(at: index)
    }

    /// Empties the queue (the client closes).
    mutating func removeAll() -> [Action] {
        defer { actions.removeAll() }
        return actions
    }
}
