import CNATS

/// A received core NATS message. Everything is copied out of the C client's message before the
/// handler sees it, so a message may be kept and sent to any thread.
public struct NATSMessage: Sendable {
    public let subject: String
    /// Where an answer goes (`respond`), if the sender asked for one.
    public let replySubject: String?
    public let headers: NATSHeaders
    public let data: [UInt8]
    /// The connection it arrived on, for `respond`.
    let connection: NATSConnection?

    public init(subject: String, replySubject: String? = nil, headers: NATSHeaders = NATSHeaders(), data: [UInt8]) {
        self.subject = subject
        self.replySubject = replySubject
        self.headers = headers
        self.data = data
        self.connection = nil
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
        self.connection = connection
    }

    /// Answers a request: publishes `data` to `replySubject` on the connection the message came
    /// in on. Non-blocking (the bytes are queued or written to the socket).
    public func respond(_ data: [UInt8], headers: NATSHeaders? = nil) throws(NATSError) {
        guard let replySubject else { throw .invalidArgument("message on \(subject) has no reply subject") }
        guard let connection else { throw .invalidArgument("message on \(subject) did not come from a connection") }
        try connection.publish(replySubject, data, headers: headers)
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
