import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// Actions sent on this node to a room another node owns: each is forwarded to the owner
/// (request/reply) under a number of this node's until its answer comes, nobody owns the room
/// (this node takes it, or waits a lease for the owner's to end), or another node announces
/// that it took the room: then the forwards the old owner held are answered as unknown.
///
/// A value type, events in and outcomes out; `ClusteredRoom` sends the requests.
struct ActionForwarder<Target: Sendable> {
    struct Request: Sendable {
        let action: String
        let args: JSON?
        let number: ActionNumber?
        let target: Target
        /// When the action was sent on this node: it is answered within the answer limit.
        let sent: ContinuousClock.Instant
        var attempt = 0
    }

    enum Next {
        /// The owner's answer, or a truthful error: through the reply gate to `target` (the action
        /// was `sent` then).
        case answer(ActionOutcome, to: Target, sent: ContinuousClock.Instant)
        /// Nobody owns the room: take it (then perform or forward again), or try again shortly.
        case ownOrRetry(Request)
    }

    private(set) var inFlight: [Int: Request] = [:]
    private var lastNumber = 0
    /// How many times an action finding no owner is tried (every 250 ms): a lease and 3 s.
    let attempts: Int
    let room: String

    init(room: String, lease: Duration) {
        self.room = room
        attempts = Int((lease + .seconds(3)) / .milliseconds(250))
    }

    /// Forwards `request`: send it under the number returned.
    mutating func forward(_ request: Request) -> Int {
        lastNumber += 1
        inFlight[lastNumber] = request
        return lastNumber
    }

    /// The request `number` ended; nil when it was answered already (`ownerChanged`).
    mutating func finished(_ number: Int, _ result: Result<NATSMessage, NATSError>) -> Next? {
        guard var request = inFlight.removeValue(forKey: number) else { return nil }
        switch result {
        case .success(let message):
            return .answer(ForwardedAction.parseReply(message.data), to: request.target, sent: request.sent)
        case .failure(.noResponders):
            guard request.attempt < attempts else {
                return .answer(.failed(ClusteredRoom.notApplied("room \(room) has no owner the cluster can reach")), to: request.target,
                               sent: request.sent)
            }
            request.attempt += 1
            return .ownOrRetry(request)
        case .failure(let error):
            return .answer(.failed(ProtocolError(.unavailable, "the room's owner did not answer (\(error))", applied: .unknown)),
                           to: request.target, sent: request.sent)
        }
    }

    /// Another node took the room: the forwards in flight now went to the old owner (paused, cut
    /// off or dead). Give the new owner a moment to answer those it received itself, then call
    /// `giveUp` with these numbers.
    var stuck: [Int] { Array(inFlight.keys) }

    /// The forwards of `numbers` still unanswered: their outcome is unknown.
    mutating func giveUp(_ numbers: [Int]) -> [Next] {
        numbers.compactMap { number in
            inFlight.removeValue(forKey: number).map { request in
                .answer(.failed(ProtocolError(.unavailable, "room \(room) changed owners while this action was with the old owner",
                                              applied: .unknown)), to: request.target, sent: request.sent)
            }
        }
    }
}
