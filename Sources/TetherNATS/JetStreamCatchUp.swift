import CNATS
import Dispatch
import Synchronization

extension JetStream {
    /// Reads the messages of `subject` in `stream` from `startSequence` on, in stream order, up to
    /// the end of the stream (messages appended meanwhile included).
    ///
    /// It reads through an ephemeral push consumer (82,000–108,000 messages/s measured), not the
    /// C client's ordered consumer: libnats 3.4.1 recreates an ordered consumer on a thread of its
    /// own after missed heartbeats or a gap, and that thread dereferences NULL when its UNSUB can't
    /// be sent (the connection closed, a write timed out): CI crashed there. A gap in the consumer
    /// sequence (messages dropped for a slow consumer) sends the read to the leader instead. Creating a consumer needs the JetStream meta leader, which is re-elected for
    /// several seconds after the server holding it dies; if the consumer can't be created within
    /// `consumerTimeout`, the read goes on with one message-get request per message instead
    /// (answered by the stream leader, about 2,000 messages/s).
    ///
    /// The read goes on to the subject's last message as the stream leader reports it when the
    /// read begins: what the consumer's replica does not deliver up to there (it may be behind
    /// the leader), the leader does, one message-get at a time.
    ///
    /// `handler` gets each message on a NATS thread, one at a time, in order (under the reader's
    /// lock: it must only hand the message on, never wait); then `completion`
    /// gets the last sequence delivered (nil when there was nothing from `startSequence` on), or
    /// an error: also `timeout` when no message came for `idleTimeout` (default: the context's
    /// timeout). After an error the messages already delivered stand: read again from the
    /// sequence after the last one. Never blocks the caller.
    public func read(stream: String, subject: String, from startSequence: UInt64, idleTimeout: Duration? = nil,
                     consumerTimeout: Duration = .seconds(1),
                     handler: @escaping @Sendable (StoredMessage) -> Void,
                     completion: @escaping @Sendable (Result<UInt64?, NATSError>) -> Void) {
        // Where the subject ends now: nothing to read if it ends before the start.
        lastMessage(stream: stream, subject: subject) { result in
            switch result {
            case .failure(let error): completion(.failure(error))
            case .success(let last):
                guard let last, last.sequence >= startSequence else { return completion(.success(nil)) }
                let reader = CatchUpReader(jetStream: self, stream: stream, subject: subject, from: startSequence, target: last.sequence, handler: handler, completion: completion)
                Blocking.start { reader.startConsumer(from: startSequence, timeout: consumerTimeout) }
                reader.watch(idleTimeout: idleTimeout ?? self.timeout)
            }
        }
    }

    /// `read` collecting the messages.
    public func messages(stream: String, subject: String, from startSequence: UInt64, idleTimeout: Duration? = nil,
                         consumerTimeout: Duration = .seconds(1)) async throws(NATSError) -> [StoredMessage] {
        let collected = Mutex<[StoredMessage]>([])
        let result = await withCheckedContinuation { continuation in
            read(stream: stream, subject: subject, from: startSequence, idleTimeout: idleTimeout, consumerTimeout: consumerTimeout,
                 handler: { message in collected.withLock { $0.append(message) } },
                 completion: { continuation.resume(returning: $0) })
        }
        _ = try result.get()
        return collected.withLock { $0 }
    }
}

/// One catch-up read: delivers in order, stops at the end of the stream, then deletes its consumer.
///
/// The consumer is served by one replica of the stream, which may be behind the stream
/// leader (a follower whose catch-up stalled after a pause or a restart: its end is not the
/// stream's). The read goes on to `target`, the subject's last message as the leader reported
/// it when the read began; what the consumer does not deliver up to there is read from the
/// leader, one `MSG.GET` at a time.
private final class CatchUpReader: @unchecked Sendable {
    // @unchecked: mutable state is in `state`; the C subscription is thread-safe.
    private struct State {
        var subscription: SubscriptionHandle?
        var finished = false
        var delivered = 0
        var lastSequence: UInt64?
        /// The last consumer sequence seen: each next one must follow it.
        var consumerSequence: UInt64 = 0
        /// The consumer fell short of `target`: messages come by `MSG.GET` now, not from it.
        var readingFromLeader = false
    }

    private let jetStream: JetStream
    private let stream: String
    private let subject: String
    private let target: UInt64
    /// The first sequence the read wants.
    private let startSequence: UInt64
    /// Where the consumer's replica ends, in tests (`JetStream.consumerReplicaEndForTests`).
    private let consumerReplicaEnd: UInt64?
    /// The consumer message lost on the way in tests (`JetStream.consumerDropsForTests`).
    private let consumerDropsForTests: UInt64?
    private let handler: @Sendable (StoredMessage) -> Void
    private let completion: @Sendable (Result<UInt64?, NATSError>) -> Void
    private let state = Mutex(State())

    init(jetStream: JetStream, stream: String, subject: String, from startSequence: UInt64, target: UInt64, handler: @escaping @Sendable (StoredMessage) -> Void,
         completion: @escaping @Sendable (Result<UInt64?, NATSError>) -> Void) {
        self.jetStream = jetStream
        self.stream = stream
        self.subject = subject
        self.target = target
        self.startSequence = startSequence
        consumerReplicaEnd = jetStream.consumerReplicaEndForTests.withLock { $0 }
        consumerDropsForTests = jetStream.consumerDropsForTests.withLock { $0 }
        self.handler = handler
        self.completion = completion
    }

    // MARK: Consumer

    /// Runs on a blocking-call thread: `js_Subscribe` creates the consumer with an API request.
    /// The consumer is configured as the C client configures an ordered one, without heartbeats
    /// and flow control (which start its recreation thread).
    func startConsumer(from startSequence: UInt64, timeout: Duration) {
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        options.Config.DeliverPolicy = js_DeliverByStartSequence
        options.Config.OptStartSeq = startSequence
        options.Config.AckPolicy = js_AckNone
        options.Config.MaxDeliver = 1
        options.Config.MemoryStorage = true
        options.Config.Replicas = 1
        var contextOptions = jsOptions()
        jsOptions_Init(&contextOptions)
        contextOptions.Wait = timeout.milliseconds
        let closure = Unmanaged.passRetained(self).toOpaque()
        var subscriptionPointer: OpaquePointer?
        var errorCode = jsErrCode(0)
        let status = stream.withCString { streamName in
            options.Stream = streamName
            return js_Subscribe(&subscriptionPointer, jetStream.context, subject, { _, _, message, closure in
                guard let message else { return }
                Unmanaged<CatchUpReader>.fromOpaque(closure!).takeUnretainedValue().deliver(message)
                natsMsg_Destroy(message)
            }, closure, &contextOptions, &options, &errorCode)
        }
        guard status == NATS_OK, let subscription = subscriptionPointer else {
            Unmanaged<CatchUpReader>.fromOpaque(closure).release()
            if errorCode.rawValue == 10059 {  // no such stream
                return finish(.failure(JetStream.apiError("catch-up consumer on \(stream) \(subject)", status, errorCode)))
            }
            return readRestFromLeader(countingIt: false)  // no consumer: not a replica behind
        }
        if natsSubscription_SetOnCompleteCB(subscription, { closure in
            Unmanaged<CatchUpReader>.fromOpaque(closure!).release()
        }, closure) != NATS_OK {
            _ = Unmanaged<CatchUpReader>.fromOpaque(closure).retain()  // closed meanwhile: leave it alive
        }
        started(subscription)
    }

    /// A consumer message on its delivery thread.
    private func deliver(_ message: OpaquePointer) {
        var metadataPointer: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&metadataPointer, message) == NATS_OK, let metadata = metadataPointer else { return }
        let sequence = metadata.pointee.Sequence.Stream
        let consumerSequence = metadata.pointee.Sequence.Consumer
        var pending = metadata.pointee.NumPending
        jsMsgMetaData_Destroy(metadata)
        if consumerSequence == consumerDropsForTests { return }
        let follows = state.withLock { state -> Bool in
            defer { state.consumerSequence = consumerSequence }
            return consumerSequence == state.consumerSequence + 1
        }
        guard follows else { return readRestFromLeader() }
        if let consumerReplicaEnd {
            guard sequence <= consumerReplicaEnd else { return }
            if sequence == consumerReplicaEnd { pending = 0 }
        }
        let copy = NATSMessage(copying: message, connection: nil)
        guard deliver(StoredMessage(subject: copy.subject, sequence: sequence, headers: copy.headers, data: copy.data), fromConsumer: true) else { return }
        guard pending == 0 else { return }
        if sequence >= target { finish(.success(sequence)) } else { readRestFromLeader() }
    }

    /// The consumer's replica ends (or stays silent) before `target`, it skipped a message, or no
    /// consumer could be made: the rest from the leader. Once: a second call (the idle watch and a failed
    /// consumer both) starts no second chain of reads.
    private func readRestFromLeader(countingIt: Bool = true) {
        let next = state.withLock { state -> UInt64? in
            guard !state.finished, !state.readingFromLeader else { return nil }
            state.readingFromLeader = true
            return state.lastSequence.map { $0 + 1 } ?? startSequence
        }
        guard let next else { return }
        if countingIt { jetStream.readsFromLeader.add(1, ordering: .relaxed) }
        readByMessageGet(from: next)
    }

    /// The consumer exists (its first messages may already have come).
    private func started(_ subscription: OpaquePointer) {
        let handle = SubscriptionHandle(pointer: subscription)
        let alreadyFinished = state.withLock { state -> Bool in
            state.subscription = handle
            return state.finished
        }
        if alreadyFinished { destroy(handle) }
    }

    /// Deletes the consumer off the delivery thread (it is an API request), then the subscription
    /// once the reader is done with it.
    private func destroy(_ subscription: SubscriptionHandle) {
        SubscriptionReaper.retire(subscription.pointer, on: jetStream.connection.pointer)
    }

    // MARK: Message gets

    /// One `MSG.GET` (next message of the subject from `sequence`) after another, until none.
    private func readByMessageGet(from sequence: UInt64) {
        jetStream.getMessage(stream: stream, request: ["seq": .int(Int(sequence)), "next_by_subj": .string(subject)]) { result in
            switch result {
            case .failure(let error): self.finish(.failure(error))
            case .success(nil): self.finish(.success(self.state.withLock { $0.lastSequence }))
            case .success(let message?):
                if self.deliver(message, fromConsumer: false) { self.readByMessageGet(from: message.sequence + 1) }
            }
        }
    }

    // MARK: Both

    /// Hands a message to the handler unless the read is over (or reads from the leader now,
    /// and this came from the consumer); false if it is not handed over.
    /// The handler runs under the lock: when the reads from the leader begin while the
    /// consumer's thread is delivering, the two threads still hand messages over in order.
    /// (The handler only hands the message to its owner's queue.)
    private func deliver(_ message: StoredMessage, fromConsumer: Bool) -> Bool {
        state.withLock { state -> Bool in
            guard !state.finished, !(fromConsumer && state.readingFromLeader) else { return false }
            state.delivered += 1
            state.lastSequence = message.sequence
            handler(message)
            return true
        }
    }

    /// Completes once and deletes the consumer if there is one.
    func finish(_ result: Result<UInt64?, NATSError>) {
        let (first, subscription) = state.withLock { state -> (Bool, SubscriptionHandle?) in
            guard !state.finished else { return (false, nil) }
            state.finished = true
            return (true, state.subscription)
        }
        guard first else { return }
        if let subscription { destroy(subscription) }
        completion(result)
    }

    /// When no message comes for `idleTimeout`: a silent consumer gives way to reads from the
    /// leader; silent reads from the leader fail the read.
    func watch(idleTimeout: Duration) {
        let seen = state.withLock { $0.finished ? nil : $0.delivered }
        guard let seen else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(idleTimeout.nanoseconds))) { [self] in
            let (progressed, fromLeader) = state.withLock { ($0.finished || $0.delivered != seen, $0.readingFromLeader) }
            if progressed {
                watch(idleTimeout: idleTimeout)
            } else if !fromLeader {
                readRestFromLeader()
                watch(idleTimeout: idleTimeout)
            } else {
                finish(.failure(.timeout(subject: subject)))
            }
        }
    }
}

private struct SubscriptionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
