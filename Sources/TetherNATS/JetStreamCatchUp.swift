import CNATS
import Dispatch
import Synchronization

extension JetStream {
    /// Reads the messages of `subject` in `stream` from `startSequence` on, in stream order, up to
    /// the end of the stream (messages appended meanwhile included), through an ordered consumer
    /// (an ephemeral push consumer the C client re-creates if it sees a gap).
    ///
    /// `handler` gets each message on the consumer's delivery thread, one at a time, in order;
    /// then `completion` gets the last sequence delivered (nil when there was nothing from
    /// `startSequence` on), or an error: also `timeout` when no message came for `idleTimeout`
    /// (default: the context's timeout) before the end was reached. Never blocks the caller.
    ///
    /// Measured (3 servers, R3, 220-byte messages): see docs/DESIGN.md, "NATS client wrapper".
    public func read(stream: String, subject: String, from startSequence: UInt64, idleTimeout: Duration? = nil,
                     handler: @escaping @Sendable (StoredMessage) -> Void,
                     completion: @escaping @Sendable (Result<UInt64?, NATSError>) -> Void) {
        // Where the subject ends now: nothing to read if it ends before the start.
        lastMessage(stream: stream, subject: subject) { result in
            switch result {
            case .failure(let error): completion(.failure(error))
            case .success(let last):
                guard let last, last.sequence >= startSequence else { return completion(.success(nil)) }
                let reader = CatchUpReader(handler: handler, completion: completion)
                Blocking.start { self.startOrderedConsumer(reader, stream: stream, subject: subject, from: startSequence) }
                reader.watch(idleTimeout: idleTimeout ?? self.timeout, subject: subject)
            }
        }
    }

    /// `read` collecting the messages.
    public func messages(stream: String, subject: String, from startSequence: UInt64, idleTimeout: Duration? = nil) async throws(NATSError) -> [StoredMessage] {
        let collected = Mutex<[StoredMessage]>([])
        let result = await withCheckedContinuation { continuation in
            read(stream: stream, subject: subject, from: startSequence, idleTimeout: idleTimeout,
                 handler: { message in collected.withLock { $0.append(message) } },
                 completion: { continuation.resume(returning: $0) })
        }
        _ = try result.get()
        return collected.withLock { $0 }
    }

    /// Runs on a blocking-call thread: `js_Subscribe` creates the consumer with an API request.
    private func startOrderedConsumer(_ reader: CatchUpReader, stream: String, subject: String, from startSequence: UInt64) {
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        options.Ordered = true
        options.Config.DeliverPolicy = js_DeliverByStartSequence
        options.Config.OptStartSeq = startSequence
        let closure = Unmanaged.passRetained(reader).toOpaque()
        var subscriptionPointer: OpaquePointer?
        var errorCode = jsErrCode(0)
        let status = stream.withCString { streamName in
            options.Stream = streamName
            return js_Subscribe(&subscriptionPointer, context, subject, { _, _, message, closure in
                guard let message else { return }
                Unmanaged<CatchUpReader>.fromOpaque(closure!).takeUnretainedValue().deliver(message)
                natsMsg_Destroy(message)
            }, closure, nil, &options, &errorCode)
        }
        guard status == NATS_OK, let subscription = subscriptionPointer else {
            Unmanaged<CatchUpReader>.fromOpaque(closure).release()
            reader.finish(.failure(Self.apiError("ordered consumer on \(stream) \(subject)", status, errorCode)))
            return
        }
        if natsSubscription_SetOnCompleteCB(subscription, { closure in
            Unmanaged<CatchUpReader>.fromOpaque(closure!).release()
        }, closure) != NATS_OK {
            _ = Unmanaged<CatchUpReader>.fromOpaque(closure).retain()  // closed meanwhile: leave it alive
        }
        reader.started(subscription)
    }
}

/// One catch-up read: delivers in order, stops at the end of the stream, then deletes its consumer.
private final class CatchUpReader: @unchecked Sendable {
    // @unchecked: mutable state is in `state`; the C subscription is thread-safe.
    private struct State {
        var subscription: SubscriptionHandle?
        var finished = false
        var delivered = 0
        var lastSequence: UInt64?
    }

    private let handler: @Sendable (StoredMessage) -> Void
    private let completion: @Sendable (Result<UInt64?, NATSError>) -> Void
    private let state = Mutex(State())

    init(handler: @escaping @Sendable (StoredMessage) -> Void, completion: @escaping @Sendable (Result<UInt64?, NATSError>) -> Void) {
        self.handler = handler
        self.completion = completion
    }

    /// A message on the consumer's delivery thread.
    func deliver(_ message: OpaquePointer) {
        var metadataPointer: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&metadataPointer, message) == NATS_OK, let metadata = metadataPointer else { return }
        let sequence = metadata.pointee.Sequence.Stream
        let pending = metadata.pointee.NumPending
        jsMsgMetaData_Destroy(metadata)
        let copy = NATSMessage(copying: message, connection: nil)
        guard state.withLock({ state -> Bool in
            guard !state.finished else { return false }
            state.delivered += 1
            state.lastSequence = sequence
            return true
        }) else { return }
        handler(StoredMessage(subject: copy.subject, sequence: sequence, headers: copy.headers, data: copy.data))
        if pending == 0 { finish(.success(sequence)) }
    }

    /// The consumer exists (its first messages may already have come).
    func started(_ subscription: OpaquePointer) {
        let handle = SubscriptionHandle(pointer: subscription)
        let alreadyFinished = state.withLock { state -> Bool in
            state.subscription = handle
            return state.finished
        }
        if alreadyFinished { Self.destroy(subscription) }
    }

    /// Completes once; the consumer is deleted off the delivery thread (it is an API request).
    func finish(_ result: Result<UInt64?, NATSError>) {
        let (first, subscription) = state.withLock { state -> (Bool, SubscriptionHandle?) in
            guard !state.finished else { return (false, nil) }
            state.finished = true
            return (true, state.subscription)
        }
        guard first else { return }
        if let subscription { Self.destroy(subscription.pointer) }
        completion(result)
    }

    private static func destroy(_ subscription: OpaquePointer) {
        let handle = SubscriptionHandle(pointer: subscription)
        Blocking.start { natsSubscription_Destroy(handle.pointer) }
    }

    /// Fails the read if no message comes for `idleTimeout`.
    func watch(idleTimeout: Duration, subject: String) {
        let seen = state.withLock { $0.finished ? nil : $0.delivered }
        guard let seen else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(idleTimeout.nanoseconds))) { [self] in
            let progressed = state.withLock { $0.finished || $0.delivered != seen }
            if progressed { watch(idleTimeout: idleTimeout, subject: subject) } else { finish(.failure(.timeout(subject: subject))) }
        }
    }
}

private struct SubscriptionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
