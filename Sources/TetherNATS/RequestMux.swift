import CNATS
import Dispatch
import HeapModule
import Synchronization

/// Request/reply without blocking anyone: one wildcard subscription on the connection's reply
/// inbox (`_INBOX.<nuid>.*`), a token per request, and one timer for every deadline (as the C
/// client's own new-style request does, minus its blocking wait).
///
/// Completions run on the inbox subscription's delivery thread (a reply), on the timer queue (a
/// timeout), on the C client's callback thread (the connection was lost or closed) or on the
/// caller's thread (the request could not be sent). They must return quickly: every reply of the
/// connection is delivered by that one thread.
final class RequestMux: @unchecked Sendable {
    // @unchecked: `timer` is only scheduled under `state`'s lock.
    typealias Completion = @Sendable (Result<NATSMessage, NATSError>) -> Void

    /// `_INBOX.<nuid>.`; a request's reply subject is this plus its token.
    let prefix: String

    private struct Pending {
        let subject: String
        let completion: Completion
    }

    private struct Deadline: Comparable {
        let uptimeNanoseconds: UInt64
        let token: UInt64
        static func < (a: Deadline, b: Deadline) -> Bool { a.uptimeNanoseconds < b.uptimeNanoseconds }
    }

    private struct State {
        var nextToken: UInt64 = 1
        var pending: [UInt64: Pending] = [:]
        /// Deadlines of requests, possibly already answered (skipped when they come up).
        var deadlines = Heap<Deadline>()
        /// When the timer fires next (nil: not armed).
        var armedAt: UInt64?
    }

    private let state = Mutex(State())
    private let timerQueue = DispatchQueue(label: "TetherNATS.request-timeouts")
    private let timer: DispatchSourceTimer

    init(prefix: String) {
        self.prefix = prefix
        timer = DispatchSource.makeTimerSource(queue: timerQueue)
        timer.setEventHandler { [weak self] in self?.expire() }
        timer.activate()
    }

    deinit { timer.cancel() }

    /// Registers a request; returns its reply subject and token.
    func register(subject: String, timeout: Duration, completion: @escaping Completion) -> (reply: String, token: UInt64) {
        let deadline = DispatchTime.now().uptimeNanoseconds &+ timeout.nanoseconds
        let token = state.withLock { state -> UInt64 in
            let token = state.nextToken
            state.nextToken += 1
            state.pending[token] = Pending(subject: subject, completion: completion)
            state.deadlines.insert(Deadline(uptimeNanoseconds: deadline, token: token))
            if state.armedAt.map({ deadline < $0 }) ?? true {
                state.armedAt = deadline
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .milliseconds(1))
            }
            return token
        }
        return (prefix + String(token), token)
    }

    /// Completes a request with `result` unless it already completed.
    func complete(token: UInt64, with result: Result<NATSMessage, NATSError>) {
        guard let pending = take(token) else { return }
        pending.completion(result)
    }

    /// A message on the inbox (called on the inbox subscription's delivery thread).
    func deliver(_ message: OpaquePointer) {
        let subject = natsMsg_GetSubject(message).map { String(cString: $0) } ?? ""
        guard subject.hasPrefix(prefix), let token = UInt64(subject.dropFirst(prefix.count)),
              let pending = take(token) else { return }
        if natsMsg_IsNoResponders(message) {
            pending.completion(.failure(.noResponders(subject: pending.subject)))
        } else {
            pending.completion(.success(NATSMessage(copying: message, connection: nil)))
        }
    }

    /// Fails every request in flight (the connection was lost or closed).
    func failAll(_ error: NATSError) {
        let all = state.withLock { state -> [Pending] in
            let all = Array(state.pending.values)
            state.pending.removeAll()
            state.deadlines = Heap()
            return all
        }
        for pending in all { pending.completion(.failure(error)) }
    }

    private func take(_ token: UInt64) -> Pending? {
        state.withLock { state in
            let pending = state.pending.removeValue(forKey: token)
            if state.pending.isEmpty { state.deadlines = Heap() }
            return pending
        }
    }

    /// The timer fired: time out what is due, re-arm for the next deadline.
    private func expire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let expired = state.withLock { state -> [Pending] in
            var expired: [Pending] = []
            while let first = state.deadlines.min, first.uptimeNanoseconds <= now {
                state.deadlines.removeMin()
                if let pending = state.pending.removeValue(forKey: first.token) { expired.append(pending) }
            }
            state.armedAt = state.deadlines.min?.uptimeNanoseconds
            if let next = state.armedAt {
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: next), leeway: .milliseconds(1))
            }
            return expired
        }
        for pending in expired { pending.completion(.failure(.timeout(subject: pending.subject))) }
    }
}

extension Duration {
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Whole milliseconds, at least 1 (the C client takes milliseconds; 0 often means "default").
    var milliseconds: Int64 { max(1, Int64(nanoseconds / 1_000_000)) }
}
