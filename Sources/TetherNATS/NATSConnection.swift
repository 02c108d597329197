import CNATS
import Foundation

/// A connection to a NATS cluster (the C client `libnats`), reconnecting forever once it has
/// connected.
///
/// ## Threading rules
/// - Every method may be called from any thread. `publish`, `subscribe`, `unsubscribe`,
///   `request` (callback form), `JetStream.publish`/`lastMessage` and the KV reads and writes
///   (callback forms) never wait for an answer: they write to the socket (or, while
///   reconnecting, to the reconnect buffer). Only a server that stops reading makes them wait,
///   for socket buffer space. Call them from a room's serial executor or the libwebsockets thread.
/// - Calls that wait for the network (`flush`, stream and bucket management, `keys`, catch-up
///   set-up) are `async` and run the C client's blocking call on a thread of their own, so no
///   caller's thread (and no Swift concurrency thread) is blocked.
/// - `init(_:events:)` connects synchronously and `close()` flushes and joins the client's
///   threads: call them at start-up and shutdown, not on a room executor or a NATS callback.
/// - Handlers and completions run on the C client's threads: each subscription's delivery
///   thread (messages of one subscription one at a time, in order), the connection's reply-inbox
///   thread (request and JetStream publish completions), the library's callback thread
///   (`events`), or the timer queue (timeouts). Everything they receive is already copied out of
///   the C client's memory. Never run ViewModel code or block there: hand the value to the
///   room's executor or the socket thread and return, or the connection's other messages wait
///   (and a subscription that falls 65,536 messages behind drops messages as a slow consumer).
public final class NATSConnection: @unchecked Sendable {
    // @unchecked: the C connection is thread-safe; the Swift state is immutable or in `RequestMux`.

    public struct Options: Sendable {
        /// Servers to connect to (`nats://host:port`); servers the cluster announces are added.
        public var urls: [String]
        /// The connection's name, shown by the servers' monitoring (`/connz`).
        public var name: String
        /// Write each message to the socket at once instead of batching in the client's buffer
        /// (measured: halves request/reply latency).
        public var sendAsap = true
        /// How long one connection attempt to one server may take.
        public var connectTimeout: Duration = .seconds(2)
        /// Pause between rounds of reconnect attempts (reconnecting never gives up).
        public var reconnectWait: Duration = .milliseconds(250)
        /// How a stopped, not killed, server is noticed (SIGSTOPped, hung, its host cut off: no
        /// TCP reset comes, and everything sent to it is lost meanwhile). libnats 3.4.1 sends a PING
        /// every `pingInterval` and drops the connection at the first tick that finds more than
        /// `maxPingsOut` unanswered, so a server that stops is noticed between
        /// `pingInterval` × `maxPingsOut` and `pingInterval` × (`maxPingsOut` + 1) later; then
        /// requests in flight fail with `disconnected` and the client moves to another server.
        /// Measured with 2 s (SIGSTOP of the server, loopback, libnats 3.4.1): 4.0–5.6 s to move
        /// with 2 pings out (7 connections), 2.0–2.8 s with 1 (11 connections; at most 4 s by the
        /// rule above). A PONG must come within `pingInterval` × `maxPingsOut`.
        public var pingInterval: Duration = .seconds(2)
        public var maxPingsOut = 1
        /// Bytes published while reconnecting are kept up to this size and sent after.
        public var reconnectBufferBytes = 8 * 1024 * 1024
        /// Deliver every subscription's messages from one small shared thread pool instead of a
        /// thread per subscription (for many subscriptions; order per subscription is kept).
        public var globalMessageDelivery = false

        public init(urls: [String], name: String) {
            self.urls = urls
            self.name = name
        }
    }

    /// What happens to the connection, delivered on the C client's callback thread.
    public enum Event: Sendable, Equatable {
        /// The connection to the current server was lost; requests in flight failed with
        /// `NATSError.disconnected`; the client is reconnecting.
        case disconnected
        case reconnected(url: String)
        /// Closed for good (by `close()`).
        case closed
        /// An asynchronous error, e.g. a slow consumer dropping messages.
        case error(String)
    }

    public let options: Options
    let pointer: OpaquePointer
    let mux: RequestMux
    private let inbox: NATSSubscription

    /// Connects, blocking until the first server answers; throws `connectionFailed` naming the
    /// URLs if none does (no retry at start).
    public init(_ options: Options, events: @escaping @Sendable (Event) -> Void = { _ in }) throws(NATSError) {
        guard !options.urls.isEmpty else { throw .invalidArgument("no NATS server URL given") }
        self.options = options

        var optionsPointer: OpaquePointer?
        var status = natsOptions_Create(&optionsPointer)
        guard status == NATS_OK, let natsOptions = optionsPointer else { throw .library("natsOptions_Create", status) }
        defer { natsOptions_Destroy(natsOptions) }

        var inboxPointer: UnsafeMutablePointer<natsInbox>?
        status = natsInbox_Create(&inboxPointer)
        guard status == NATS_OK, let inboxPointer else { throw .library("natsInbox_Create", status) }
        mux = RequestMux(prefix: String(cString: inboxPointer) + ".")
        natsInbox_Destroy(inboxPointer)

        let box = Unmanaged.passRetained(EventBox(handler: events, mux: mux)).toOpaque()
        do {
            try Self.configure(natsOptions, options, eventBox: box)
        } catch {
            Unmanaged<EventBox>.fromOpaque(box).release()
            throw error
        }

        var connection: OpaquePointer?
        status = natsConnection_Connect(&connection, natsOptions)
        guard status == NATS_OK, let connection else {
            let reason = NATSError.library("connect", status).description
            Unmanaged<EventBox>.fromOpaque(box).release()  // no callback fires for a failed connect
            throw .connectionFailed(urls: options.urls, reason: reason)
        }
        pointer = connection
        do {
            let mux = mux
            inbox = try NATSSubscription.subscribe(connection, subject: mux.prefix + "*", queueGroup: nil,
                                                   delivery: .raw { message in mux.deliver(message) })
        } catch {
            natsConnection_Destroy(connection)
            throw error
        }
    }

    /// `init` on a thread of its own, for callers that must not block.
    public static func connect(_ options: Options, events: @escaping @Sendable (Event) -> Void = { _ in }) async throws(NATSError) -> NATSConnection {
        try await Blocking.run { () throws(NATSError) in try NATSConnection(options, events: events) }
    }

    deinit {
        natsConnection_Destroy(pointer)
    }

    private static func configure(_ natsOptions: OpaquePointer, _ options: Options, eventBox: UnsafeMutableRawPointer) throws(NATSError) {
        func check(_ status: natsStatus, _ what: String) throws(NATSError) {
            guard status == NATS_OK else { throw .library(what, status) }
        }
        var urls = options.urls.map { strdup($0) }
        defer { urls.forEach { free($0) } }
        let status = urls.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                natsOptions_SetServers(natsOptions, $0, Int32(buffer.count))
            }
        }
        try check(status, "natsOptions_SetServers(\(options.urls.joined(separator: ",")))")
        try check(natsOptions_SetName(natsOptions, options.name), "natsOptions_SetName")
        try check(natsOptions_SetSendAsap(natsOptions, options.sendAsap), "natsOptions_SetSendAsap")
        try check(natsOptions_SetTimeout(natsOptions, options.connectTimeout.milliseconds), "natsOptions_SetTimeout")
        try check(natsOptions_SetAllowReconnect(natsOptions, true), "natsOptions_SetAllowReconnect")
        try check(natsOptions_SetMaxReconnect(natsOptions, -1), "natsOptions_SetMaxReconnect")
        try check(natsOptions_SetReconnectWait(natsOptions, options.reconnectWait.milliseconds), "natsOptions_SetReconnectWait")
        try check(natsOptions_SetPingInterval(natsOptions, options.pingInterval.milliseconds), "natsOptions_SetPingInterval")
        try check(natsOptions_SetMaxPingsOut(natsOptions, Int32(options.maxPingsOut)), "natsOptions_SetMaxPingsOut")
        try check(natsOptions_SetReconnectBufSize(natsOptions, Int32(options.reconnectBufferBytes)), "natsOptions_SetReconnectBufSize")
        try check(natsOptions_UseGlobalMessageDelivery(natsOptions, options.globalMessageDelivery), "natsOptions_UseGlobalMessageDelivery")
        try check(natsOptions_SetDisconnectedCB(natsOptions, { _, closure in
            Unmanaged<EventBox>.fromOpaque(closure!).takeUnretainedValue().disconnected()
        }, eventBox), "natsOptions_SetDisconnectedCB")
        try check(natsOptions_SetReconnectedCB(natsOptions, { connection, closure in
            Unmanaged<EventBox>.fromOpaque(closure!).takeUnretainedValue().reconnected(url: NATSConnection.connectedURL(connection) ?? "")
        }, eventBox), "natsOptions_SetReconnectedCB")
        try check(natsOptions_SetClosedCB(natsOptions, { _, closure in
            // The last callback of a connection: the box's C reference ends here.
            Unmanaged<EventBox>.fromOpaque(closure!).takeRetainedValue().closed()
        }, eventBox), "natsOptions_SetClosedCB")
        try check(natsOptions_SetErrorHandler(natsOptions, { _, subscription, status, closure in
            var text = String(cString: natsStatus_GetText(status))
            if let subscription, let subject = natsSubscription_GetSubject(subscription) {
                text += " on \(String(cString: subject))"
            }
            Unmanaged<EventBox>.fromOpaque(closure!).takeUnretainedValue().handler(.error(text))
        }, eventBox), "natsOptions_SetErrorHandler")
    }

    // MARK: State

    public var isConnected: Bool { natsConnection_Status(pointer) == NATS_CONN_STATUS_CONNECTED }
    public var isClosed: Bool { natsConnection_IsClosed(pointer) }
    /// The URL of the server it is connected to now.
    public var connectedURL: String? { Self.connectedURL(pointer) }

    private static func connectedURL(_ connection: OpaquePointer?) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard natsConnection_GetConnectedUrl(connection, &buffer, buffer.count) == NATS_OK, buffer[0] != 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    // MARK: Core NATS

    /// Publishes `data` (with `headers`, and a reply subject if given). Does not wait for an
    /// answer: the bytes are written to the socket or, while reconnecting, to the reconnect buffer
    /// (an error once that is full).
    public func publish(_ subject: String, _ data: [UInt8], headers: NATSHeaders? = nil, replySubject: String? = nil) throws(NATSError) {
        if let headers, !headers.isEmpty {
            let message = try Self.makeMessage(subject, data, headers: headers, replySubject: replySubject)
            defer { natsMsg_Destroy(message) }
            let status = natsConnection_PublishMsg(pointer, message)
            guard status == NATS_OK else { throw .library("publish(\(subject))", status) }
            return
        }
        let status = data.withUnsafeBytes { bytes in
            if let replySubject {
                natsConnection_PublishRequest(pointer, subject, replySubject, bytes.baseAddress, Int32(bytes.count))
            } else {
                natsConnection_Publish(pointer, subject, bytes.baseAddress, Int32(bytes.count))
            }
        }
        guard status == NATS_OK else { throw .library("publish(\(subject))", status) }
    }

    static func makeMessage(_ subject: String, _ data: [UInt8], headers: NATSHeaders, replySubject: String?) throws(NATSError) -> OpaquePointer {
        var messagePointer: OpaquePointer?
        let status = data.withUnsafeBytes { bytes in
            natsMsg_Create(&messagePointer, subject, replySubject,
                           bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
        }
        guard status == NATS_OK, let message = messagePointer else { throw .library("natsMsg_Create(\(subject))", status) }
        do {
            try headers.apply(to: message)
        } catch {
            natsMsg_Destroy(message)
            throw error
        }
        return message
    }

    /// Subscribes to `subject` (wildcards allowed), as a member of `queueGroup` if given (each
    /// message then goes to one member). `handler` runs on this subscription's delivery thread,
    /// one message at a time, in order. Keep the returned subscription: releasing it unsubscribes.
    public func subscribe(_ subject: String, queueGroup: String? = nil, handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> NATSSubscription {
        try NATSSubscription.subscribe(pointer, subject: subject, queueGroup: queueGroup, delivery: .message(handler, WeakConnection(connection: self)))
    }

    /// Sends a request and calls `completion` once: with the first reply, or `noResponders`
    /// (nobody subscribes to `subject`), `timeout`, `notConnected` (reconnecting: not sent),
    /// `disconnected` or `closed`. Never blocks; `completion` runs on a NATS thread (see the
    /// type's threading rules) and must return quickly.
    public func request(_ subject: String, _ data: [UInt8], headers: NATSHeaders? = nil, timeout: Duration,
                        completion: @escaping @Sendable (Result<NATSMessage, NATSError>) -> Void) {
        guard isConnected else {
            completion(.failure(isClosed ? .closed : .notConnected))
            return
        }
        let (reply, token) = mux.register(subject: subject, timeout: timeout, completion: completion)
        do {
            try publish(subject, data, headers: headers, replySubject: reply)
        } catch {
            mux.complete(token: token, with: .failure(error))
        }
    }

    public func request(_ subject: String, _ data: [UInt8], headers: NATSHeaders? = nil, timeout: Duration) async throws(NATSError) -> NATSMessage {
        let result = await withCheckedContinuation { continuation in
            request(subject, data, headers: headers, timeout: timeout) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Waits until the server has processed everything sent so far (a PING/PONG round trip).
    public func flush(timeout: Duration = .seconds(5)) async throws(NATSError) {
        try await Blocking.run { () throws(NATSError) in
            let status = natsConnection_FlushTimeout(self.pointer, timeout.milliseconds)
            guard status == NATS_OK else { throw .library("flush", status) }
        }
    }

    /// Flushes what is queued (up to 0.5 s), closes the connection and its subscriptions, and
    /// joins the client's threads; the `closed` event follows. Blocks briefly: call at shutdown,
    /// never from a NATS callback.
    public func close() {
        natsConnection_Close(pointer)
    }

    /// A JetStream context on this connection; `timeout` bounds each JetStream API call.
    public func jetStream(timeout: Duration = .seconds(5)) throws(NATSError) -> JetStream {
        try JetStream(connection: self, timeout: timeout)
    }
}

/// What the connection's C callbacks reach (retained by the C side until the `closed` callback).
private final class EventBox: Sendable {
    let handler: @Sendable (NATSConnection.Event) -> Void
    let mux: RequestMux

    init(handler: @escaping @Sendable (NATSConnection.Event) -> Void, mux: RequestMux) {
        self.handler = handler
        self.mux = mux
    }

    func disconnected() {
        mux.failAll(.disconnected)
        handler(.disconnected)
    }

    func reconnected(url: String) { handler(.reconnected(url: url)) }

    func closed() {
        mux.failAll(.closed)
        handler(.closed)
    }
}

/// Runs the C client's blocking calls (connect, flush, management, consumer set-up) off the
/// callers' threads, on a thread each: they are rare and wait for the network (up to the
/// JetStream timeout during an election), and one slow call must not hold up another (a shared
/// dispatch queue's few threads would).
enum Blocking {
    static func start(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            body()
            nats_ReleaseThreadMemory()  // the C client's per-thread error state
        }
        thread.name = "TetherNATS blocking call"
        thread.start()
    }

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(NATSError) -> T) async throws(NATSError) -> T {
        let result: Result<T, NATSError> = await withCheckedContinuation { continuation in
            start { continuation.resume(returning: Result { () throws(NATSError) -> T in try body() }) }
        }
        return try result.get()
    }
}
