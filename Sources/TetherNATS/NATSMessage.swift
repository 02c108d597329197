import CNATS

/// A received core NATS message. Everything is copied out of the C client's message before the
/// handler sees it, so a message may be kept and sent to any thread.
public struct NATSMessage: Sendable {
    public let subject: String
    /// Where an answer goes (`respond`), if the sender asked for one.
    public let replySubject: String?
    public let headers: NATSHeaders
    public let data: [UInt8]
    /// Sends an answer to `replySubject`: on the connection the message came in on, or the way
    /// an in-memory transport gave.
    private let responder: (@Sendable (_ replySubject: String, _ data: [UInt8], _ headers: NATSHeaders?) throws(NATSError) -> Void)?

    /// A message made outside a connection (an in-memory transport); `respond`, if given,
    /// answers it.
    public init(subject: String, replySubject: String? = nil, headers: NATSHeaders = NATSHeaders(), data: [UInt8],
                respond: (@Sendable (_ replySubject: String, _ data: [UInt8], _ headers: NATSHeaders?) throws(NATSError) -> Void)? = nil) {
        self.subject = subject
        self.replySubject = replySubject
        self.headers = headers
        self.data = data
        self.responder = respond
    }

    /// Copies a C message (the caller still owns and destroys it).
    init(copying message: OpaquePointer, connection: NATSConnection?) {
        subject = String(cString: natsMsg_GetSubject(message))
        replySubject = natsMsg_GetReply(message).map { String(cString: $0) }
        headers = NATSHeaders(copying: message)
        let count = Int(natsMsg_GetDataLength(message))
        if count > 0, let bytes = natsMsg_GetData(message) {
            data = Array(UnsafeRawBufferPointer(start: bytes, count: count))
        } else {
            data = []
        }
        if let connection {
            // Weak: a kept message must not keep its connection open.
            let weak = WeakConnection(connection: connection)
            responder = { (replySubject: String, data: [UInt8], headers: NATSHeaders?) throws(NATSError) -> Void in
                guard let connection = weak.connection else { throw NATSError.closed }
                try connection.publish(replySubject, data, headers: headers)
            }
        } else {
            responder = nil
        }
    }

    /// Answers a request: publishes `data` to `replySubject` on the connection the message came
    /// in on. Non-blocking (the bytes are queued or written to the socket).
    public func respond(_ data: [UInt8], headers: NATSHeaders? = nil) throws(NATSError) {
        guard let replySubject else { throw .invalidArgument("message on \(subject) has no reply subject") }
        guard let responder else { throw .invalidArgument("message on \(subject) did not come from a connection") }
        try responder(replySubject, data, headers)
    }
}

/// A message stored in a JetStream stream, with its stream sequence.
public struct StoredMessage: Sendable, Equatable {
    public let subject: String
    public let sequence: UInt64
    public let headers: NATSHeaders
    public let data: [UInt8]

    public init(subject: String, sequence: UInt64, headers: NATSHeaders, data: [UInt8]) {
        self.subject = subject
        self.sequence = sequence
        self.headers = headers
        self.data = data
    }
}
