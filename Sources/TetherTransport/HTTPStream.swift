import CLibWebSockets

/// A response whose body is written piece by piece for as long as both sides keep it (Server-Sent
/// Events). Headers go out without a length (HTTP/1.1 then ends the body by closing the
/// connection; HTTP/2 by ending the stream). Used on its server loop's thread only.
public final class HTTPStream {
    /// False once the peer went away or `close` finished.
    public private(set) var isOpen = true
    /// Called once what was written has gone out, after `requestWritable`.
    public var onWritable: (() -> Void)?
    /// Called once, when the connection ends (either side).
    public var onClosed: (() -> Void)?
    /// Written when nothing else was for this many seconds, so proxies keep the connection and a
    /// vanished peer is noticed (an SSE comment line).
    public var keepalive: (seconds: Int, bytes: [UInt8])?

    let head: HTTPResponse
    var headWritten = false
    var pending: [UInt8] = []
    var closing = false
    var wantsWritable = false
    var silentSeconds = 0
    /// Asks lws for a writable callback (only while open: the connection is gone after).
    private let wake: () -> Void
    /// Makes lws end the connection after this many seconds, whatever is still unsent.
    private let expire: (Int32) -> Void
    /// How long a closing stream may take to send what it queued (a reader that stopped reading).
    static let closeSeconds: Int32 = 5

    init(head: HTTPResponse, wake: @escaping () -> Void, expire: @escaping (Int32) -> Void) {
        self.head = head
        self.wake = wake
        self.expire = expire
    }

    /// True while earlier writes wait for the socket: stop writing until `onWritable`.
    public var isChoked: Bool { !pending.isEmpty }

    /// Queues bytes for the body; false once the stream is closing or gone.
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard isOpen, !closing else { return false }
        pending.append(contentsOf: bytes)
        silentSeconds = 0
        wake()
        return true
    }

    /// Asks for one `onWritable` call once what is queued has gone out.
    public func requestWritable() {
        guard isOpen else { return }
        wantsWritable = true
        wake()
    }

    /// Sends what is queued, then ends the response; a peer that does not take it within
    /// `closeSeconds` is cut off.
    public func close() {
        guard isOpen, !closing else { return }
        closing = true
        expire(Self.closeSeconds)
        wake()
    }

    /// The connection ended.
    func ended() {
        guard isOpen else { return }
        isOpen = false
        onClosed?()
    }

    /// A second passed; true when the keepalive bytes were queued.
    func tick() {
        silentSeconds += 1
        guard let keepalive, silentSeconds >= keepalive.seconds, pending.isEmpty, !closing else { return }
        keepalive.bytes.withUnsafeBytes { _ = write($0) }
    }
}

extension ServerLoop {
    /// Starts a streamed answer to the request `id` on `connection`, if it still waits (loop thread).
    func startStream(_ connection: HTTPConnection, id: Int, head: HTTPResponse) -> HTTPStream? {
        let wsi = connection.wsi
        guard isOnLoopThread, pendingHTTP[wsi]?.id == id, pendingHTTP[wsi]?.response == nil, streams[wsi] == nil else { return nil }
        pendingHTTP[wsi] = nil
        headRequests.remove(wsi)
        let stream = HTTPStream(head: head, wake: { lws_callback_on_writable(wsi) },
                                expire: { seconds in lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, seconds) })
        streams[wsi] = stream
        // A stream has no end in sight: no request timeout may cut it.
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0)
        if answeringNow != wsi { lws_callback_on_writable(wsi) }
        return stream
    }

    /// `LWS_CALLBACK_HTTP_WRITEABLE` for a stream: the head once, then what is queued.
    func writeStream(_ wsi: OpaquePointer, _ stream: HTTPStream) -> Int32 {
        if !stream.headWritten {
            var head = stream.head
            head.body = []
            guard writeHTTP(wsi, head, declaresLength: false) else { return -1 }
            stream.headWritten = true
        }
        if !stream.pending.isEmpty {
            // One piece per callback: lws keeps what the socket does not take and calls back after.
            let count = min(stream.pending.count, 64 * 1024)
            let destination = scratchPayload(capacity: count)
            stream.pending.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(destination).copyMemory(from: bytes.baseAddress!, byteCount: count)
            }
            guard lws_write(wsi, destination, count, LWS_WRITE_HTTP) >= 0 else { return -1 }
            stream.pending.removeFirst(count)
        }
        if !stream.pending.isEmpty {
            lws_callback_on_writable(wsi)
            return 0
        }
        if stream.closing { return -1 }
        if stream.wantsWritable {
            stream.wantsWritable = false
            stream.onWritable?()
        }
        return 0
    }

    /// Keepalives of idle streams (every second).
    func tickStreams() {
        for stream in streams.values { stream.tick() }
    }
}
