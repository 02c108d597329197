import CLibWebSockets

/// One WebSocket connection, server-accepted or client-initiated.
///
/// Loop-thread confined: use its members only on the service thread of the server or client that
/// owns it (inside delegate callbacks or closures given to `execute`). It is `@unchecked
/// Sendable` only so such closures can capture it; `id`, `remoteAddress` and `subprotocol` are
/// immutable and safe to read anywhere. Identity lives until the closing callback
/// (`connectionClosed` / `clientConnectFailed`); after it every send returns false.
///
/// Framing, the scratch buffer, receive reassembly and closing are the same code for server and
/// client connections.
public final class WebSocketConnection: @unchecked Sendable {
    /// Unique per server (or per client), never reused.
    public let id: UInt64
    /// Peer IP address (server side) or the host from the URL (client side).
    public let remoteAddress: String
    /// The negotiated subprotocol; nil when the client offered none.
    public let subprotocol: String?
    /// Free slot for the layer above (session object etc.). Cleared by nobody: drop it in the
    /// closing callback if it references the connection back.
    public var context: AnyObject?
    /// The close code sent to or received from the peer, once there is one.
    public private(set) var closeCode: UInt16?
    /// Server side: the client negotiated permessage-deflate, so frames compressed once for
    /// every such subscriber (`PackedFrames.appendText(_:compressed:)`) may be sent to it.
    /// Client side: whether to offer the extension (set by `WebSocketClient.connect`).
    public internal(set) var usesCompression = false

    enum Owner {
        case server(any WebSocketServerDelegate)
        case client(any WebSocketClientDelegate)
    }

    let loop: ServiceLoop
    let owner: Owner
    var wsi: OpaquePointer?
    /// Reassembly buffer, allocated only while a message arrives in several pieces.
    private var rx: [UInt8]?
    /// The text message being received, so far (fresh between messages).
    private var utf8 = UTF8Validator()
    private var pendingClose: (code: UInt16, reason: String)?
    /// Client side, until the connection opens: where it goes and why it failed.
    var pendingConnect: PendingConnect?
    private(set) var isOpened = false
    private(set) var isFinished = false
    private var isRetained = false
    private var wantsWritable = false
    /// Keepalive (server side, `KeepaliveSweep`): the sweep tick at which the peer was last
    /// heard from, whether a ping is due at the next writable callback, and where the sweep
    /// keeps this connection.
    var lastHeardTick = 0
    var pingDue = false
    var keepaliveIndex = -1
    private var writeFailed = false
    private var closeSent = false

    init(id: UInt64, remoteAddress: String, subprotocol: String?, loop: ServiceLoop, owner: Owner) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.subprotocol = subprotocol
        self.loop = loop
        self.owner = owner
    }

    // MARK: Public API (loop thread only)

    /// True between the open callback and the close callback, until `close` is called.
    public var isOpen: Bool {
        isOpened && !isFinished && !closeSent && pendingClose == nil
    }

    /// True when the socket took less than the last frame, so lws holds the rest
    /// (lws_partial_buffered): stop writing; lws asks for `connectionWritable` again once it has
    /// flushed. A closed connection reports true.
    ///
    /// Not `lws_send_pipe_choked`, which costs a `poll()` system call per check: inside a
    /// writable callback the socket was writable, and a send that doesn't fit is buffered by
    /// lws (measured: one system call per frame instead of two).
    public var isChoked: Bool {
        assertLoopThread()
        guard let wsi, !isFinished else { return true }
        return lws_partial_buffered(wsi) != 0
    }

    /// Asks for one `connectionWritable` call when the socket can take data.
    public func requestWritable() {
        assertLoopThread()
        guard let wsi, !isFinished else { return }
        wantsWritable = true
        lws_callback_on_writable(wsi)
    }

    /// Sends one text frame (the bytes must be UTF-8). The payload is copied into the loop's
    /// private scratch buffer with LWS_PRE headroom (lws writes the frame header there and masks
    /// client frames in place), so any buffer may be passed. Returns false once the close frame
    /// is out or the connection is gone, or if the write failed. Call from `connectionWritable`
    /// while `!isChoked`: writing several frames per call is the fast path. (lws buffers what the
    /// kernel does not take, so a write on a choked socket still goes out, at the cost of memory.)
    @discardableResult
    public func sendText(_ payload: UnsafeRawBufferPointer) -> Bool {
        write(payload, LWS_WRITE_TEXT)
    }

    /// Sends one binary frame (same rules as `sendText`).
    @discardableResult
    public func sendBinary(_ payload: UnsafeRawBufferPointer) -> Bool {
        write(payload, LWS_WRITE_BINARY)
    }

    /// Sends every frame of `frames` with one write: one `send()` (or one `SSL_write`) however
    /// many frames it holds. Server connections only (a client's frames must be masked).
    ///
    /// The bytes go out through `lws_write(LWS_WRITE_RAW)`, which skips lws's framing and
    /// extensions and hands them to the socket (or TLS) as they are. lws's framing state stays
    /// consistent because every frame in the buffer is complete: lws only tracks a frame it
    /// wrote itself and sent in part. What the socket does not take, lws keeps and sends before
    /// anything else (`isChoked` is then true), so frames stay whole and in order, and the
    /// control frames lws writes itself (pong, close) queue behind them. Returns false once the
    /// close frame is out or the connection is gone, or if the write failed.
    @discardableResult
    public func send(_ frames: PackedFrames) -> Bool {
        assertLoopThread()
        assert(isServerSide, "PackedFrames are unmasked: server connections only")
        guard let wsi, isOpened, !isFinished, !closeSent, !writeFailed else { return false }
        guard !frames.isEmpty else { return true }
        let count = frames.byteCount
        let written = frames.bytes.withUnsafeBufferPointer { buffer in
            // LWS_WRITE_RAW neither writes into nor masks the buffer: it is only read.
            lws_write(wsi, UnsafeMutablePointer(mutating: buffer.baseAddress!), count, TETHER_LWS_WRITE_RAW)
        }
        if written < 0 || Int(written) < count {
            writeFailed = true
            lws_callback_on_writable(wsi)
            return false
        }
        return true
    }

    /// Convenience: sends `text` as one text frame.
    @discardableResult
    public func sendText(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { write(UnsafeRawBufferPointer($0), LWS_WRITE_TEXT) }
    }

    /// Closes the connection with `code` (e.g. 1000, 1001, 1008, 1009) and `reason` (cut to 123
    /// bytes of UTF-8). At the next writable moment the delegate gets one last
    /// `connectionWritable` to flush what it still has queued (as far as the socket takes it
    /// without blocking), then the close frame goes out and the connection is dropped.
    /// `isOpen` is false from this call on. On a client connection that has not opened yet, this
    /// cancels the connect attempt (`clientConnectFailed` follows).
    public func close(code: UInt16 = 1000, reason: String = "") {
        assertLoopThread()
        guard !isFinished, !closeSent, pendingClose == nil else { return }
        if !isOpened {
            pendingConnect?.failureReason = "cancelled before the connection opened"
            if let wsi { lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, -1 /* LWS_TO_KILL_ASYNC */) }
            return
        }
        beginClose(code: code, reason: reason)
    }

    /// Records the close and asks for the writable callback that sends it. If the close frame
    /// cannot go out within `closeSendTimeout` seconds (peer not reading), lws drops the socket.
    private func beginClose(code: UInt16, reason: String) {
        pendingClose = (code, reason)
        rx = nil
        guard let wsi else { return }
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, Self.closeSendTimeout)
        lws_callback_on_writable(wsi)
    }

    static let closeSendTimeout: Int32 = 5

    var isServerSide: Bool {
        if case .server = owner { return true }
        return false
    }

    // MARK: Loop plumbing

    static func from(_ wsi: OpaquePointer) -> WebSocketConnection? {
        guard let raw = lws_get_opaque_user_data(wsi) else { return nil }
        return Unmanaged<WebSocketConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The opaque pointer to hand to lws; retains self until `finish()`.
    func retainedOpaquePointer() -> UnsafeMutableRawPointer {
        if !isRetained {
            isRetained = true
            _ = Unmanaged.passUnretained(self).retain()
        }
        return Unmanaged.passUnretained(self).toOpaque()
    }

    func attach(_ wsi: OpaquePointer) {
        self.wsi = wsi
        if lws_get_opaque_user_data(wsi) == nil {
            lws_set_opaque_user_data(wsi, retainedOpaquePointer())
        }
    }

    /// Handshake complete: the connection counts as open from now on.
    func markOpened() {
        guard !isOpened else { return }
        isOpened = true
        pendingConnect = nil
        loop.openConnectionCount.add(1, ordering: .relaxed)
    }

    private func assertLoopThread() {
        assert(loop.isOnLoopThread || isFinished, "WebSocketConnection used off its service thread")
    }

    private func write(_ payload: UnsafeRawBufferPointer, _ kind: lws_write_protocol) -> Bool {
        assertLoopThread()
        guard let wsi, isOpened, !isFinished, !closeSent, !writeFailed else { return false }
        let destination = loop.scratchPayload(capacity: payload.count)
        if let source = payload.baseAddress, payload.count > 0 {
            UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: payload.count)
        }
        let written = lws_write(wsi, destination, payload.count, kind)
        if written < 0 || Int(written) < payload.count {
            // The socket is broken; make sure lws gets a chance to close it from a callback.
            writeFailed = true
            lws_callback_on_writable(wsi)
            return false
        }
        return true
    }

    private func applyClose(code: UInt16, reason: String) {
        guard let wsi, !closeSent else { return }
        var bytes: [UInt8] = []
        for scalar in reason.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            if bytes.count + encoded.count > 123 { break }
            bytes.append(contentsOf: encoded)
        }
        bytes.withUnsafeMutableBufferPointer { buffer in
            lws_close_reason(wsi, lws_close_status(rawValue: UInt32(code)), buffer.baseAddress, buffer.count)
        }
        closeCode = code
        closeSent = true
        pendingClose = nil
        rx = nil
    }

    /// What a callback returns after user code ran: -1 makes lws drop the connection.
    func statusAfterUserCode() -> Int32 {
        writeFailed ? -1 : 0
    }

    /// The peer sent something (a message, a pong): it is alive.
    func heardFromPeer() {
        lastHeardTick = loop.keepaliveTick
    }

    /// Asks for the writable callback that sends a ping (keepalive).
    func schedulePing() {
        guard let wsi, !isFinished, !pingDue else { return }
        pingDue = true
        lws_callback_on_writable(wsi)
    }

    /// Drops the connection without a close handshake (a dead peer would not answer it).
    func hangUp() {
        guard let wsi, !isFinished else { return }
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, -1 /* LWS_TO_KILL_ASYNC */)
    }

    func didReceive(_ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
        guard let wsi, isOpened, !isFinished else { return -1 }
        lastHeardTick = loop.keepaliveTick
        if closeSent || pendingClose != nil { return 0 }  // closing: drop what still arrives
        let chunk = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : max(0, len))
        let isFinal = lws_is_final_fragment(wsi) != 0
        let isBinary = lws_frame_is_binary(wsi) != 0
        let buffered = rx?.count ?? 0
        let remaining = Int(clamping: lws_remaining_packet_payload(wsi))
        let limit = loop.maxMessageBytes
        if buffered > limit || chunk.count > limit - buffered || remaining > limit - buffered - chunk.count {
            // Flush what the delegate queued for earlier messages, then 1009; the rest of this
            // message is dropped unread.
            beginClose(code: 1009, reason: "message too big")
            return 0
        }
        if !isBinary && loop.validatesUTF8 {
            guard utf8.consume(chunk), !isFinal || utf8.isComplete else {
                // As lws would: the close frame now, before anything queued (RFC 6455 §8.1).
                applyClose(code: 1007, reason: "invalid UTF-8")
                return -1
            }
            if isFinal { utf8 = UTF8Validator() }
        }
        if rx == nil && isFinal {
            deliver(chunk, binary: isBinary)  // whole message in one piece: no copy
        } else {
            if rx == nil {
                var buffer: [UInt8] = []
                buffer.reserveCapacity(chunk.count + remaining)
                rx = buffer
            }
            rx?.append(contentsOf: chunk)
            if isFinal {
                let message = rx ?? []
                rx = nil
                message.withUnsafeBytes { deliver($0, binary: isBinary) }
            }
        }
        return statusAfterUserCode()
    }

    private func deliver(_ payload: UnsafeRawBufferPointer, binary: Bool) {
        switch owner {
        case .server(let delegate):
            if binary {
                delegate.connection(self, receivedBinary: payload)
            } else {
                delegate.connection(self, receivedText: payload)
            }
        case .client(let delegate):
            if binary {
                delegate.connection(self, receivedBinary: payload)
            } else {
                delegate.connection(self, receivedText: payload)
            }
        }
    }

    func didBecomeWritable() -> Int32 {
        guard wsi != nil, isOpened, !isFinished else { return 0 }
        if closeSent || writeFailed { return -1 }
        if loop.phase == .closing && pendingClose == nil {
            let close = loop.shutdownClose
            applyClose(code: close.code, reason: close.reason)
            return -1
        }
        wantsWritable = false
        if pingDue, let wsi {
            pingDue = false
            // One byte, not none: lws 4.1 gives no RECEIVE_PONG callback for an empty pong, so a
            // peer answering an empty ping would still count as silent and be dropped.
            let payload = loop.scratchPayload(capacity: 1)
            payload.pointee = UInt8(ascii: "k")
            if lws_write(wsi, payload, 1, LWS_WRITE_PING) < 0 { return -1 }
        }
        switch owner {
        case .server(let delegate): delegate.connectionWritable(self)
        case .client(let delegate): delegate.connectionWritable(self)
        }
        if writeFailed { return -1 }
        if let close = pendingClose {
            // close() was called before or during this callback: the flush above was the last.
            applyClose(code: close.code, reason: close.reason)
            return -1
        }
        if loop.phase == .draining && !wantsWritable {
            // Shutdown drain: nothing more queued for this connection, say goodbye now.
            let close = loop.shutdownClose
            applyClose(code: close.code, reason: close.reason)
            return -1
        }
        return 0
    }

    /// The peer's close frame (lws has already turned codes no one may send into 1002); 0 lets
    /// lws echo it, -1 closes with our own code instead. lws 4.1 would echo a 1-byte payload
    /// as it is, and checks no reason's UTF-8 now that we validate (RFC 6455 §5.5.1, §8.1).
    func peerSentClose(_ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
        guard !closeSent else { return 0 }
        let payload = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : max(0, len))
        if payload.count == 1 {
            applyClose(code: 1002, reason: "close payload of 1 byte")
            return -1
        }
        if payload.count > 2 && loop.validatesUTF8 && !UTF8Validator.isValid(UnsafeRawBufferPointer(rebasing: payload[2...])) {
            applyClose(code: 1007, reason: "close reason not UTF-8")
            return -1
        }
        closeCode = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : 1005
        return 0
    }

    /// The lws connection is gone (WSI_DESTROY, or a client connect that never got a wsi):
    /// report it exactly once and drop the retain taken for lws.
    func finish() {
        guard !isFinished else { return }
        withExtendedLifetime(self) {
            isFinished = true
            wsi = nil
            rx = nil
            pendingClose = nil
            if isOpened { loop.openConnectionCount.subtract(1, ordering: .relaxed) }
            loop.connectionFinished(self)
            switch owner {
            case .server(let delegate):
                if isOpened { delegate.connectionClosed(self) }
            case .client(let delegate):
                if isOpened {
                    delegate.connectionClosed(self, code: closeCode)
                } else {
                    let reason = pendingConnect?.describeFailure(destroying: loop.isDestroying)
                        ?? "connection closed before the WebSocket handshake completed"
                    delegate.clientConnectFailed(self, reason: reason)
                }
            }
            if isRetained {
                isRetained = false
                Unmanaged.passUnretained(self).release()
            }
        }
    }
}

/// Client-side state of a connection that has not opened yet.
final class PendingConnect {
    let endpoint: String
    let timeout: Duration
    var startedAt: ContinuousClock.Instant?
    var failureReason: String?
    /// The address to bind the socket to, if any.
    var localAddress: String?

    init(endpoint: String, timeout: Duration) {
        self.endpoint = endpoint
        self.timeout = timeout
    }

    /// One line: "ws://host:port/path: why".
    func describeFailure(destroying: Bool) -> String {
        if let failureReason { return "\(endpoint): \(failureReason)" }
        if destroying { return "\(endpoint): client shut down before the connection opened" }
        if let startedAt, ContinuousClock.now - startedAt >= timeout - .milliseconds(200) {
            return "\(endpoint): timed out (no WebSocket handshake within \(timeout))"
        }
        return "\(endpoint): connection closed before the WebSocket handshake completed"
    }
}
