import TetherTransport

/// What the hub needs of one client connection: libwebsockets' connection in production, an
/// in-memory one in tests (TetherTesting). Used only on the hub's queue.
public protocol ClientConnection: AnyObject {
    /// The peer's IP address, for per-address limits and logs.
    var remoteAddress: String { get }
    /// The hub's session for this connection (set on open, cleared on close).
    var context: AnyObject? { get set }
    /// True from open until `close` is called or the peer went away.
    var isOpen: Bool { get }
    /// True while the last frame is not fully written: stop sending until the next writable call.
    var isChoked: Bool { get }
    /// Sends one text frame; false once the connection is closing or gone.
    @discardableResult
    func sendText(_ payload: UnsafeRawBufferPointer) -> Bool
    /// Sends several frames with one write where the connection can (libwebsockets: one
    /// `send()`); false once the connection is closing or gone.
    @discardableResult
    func send(_ frames: PackedFrames) -> Bool
    /// Whether the peer negotiated permessage-deflate: frames rooms compressed once may go to it.
    var usesCompression: Bool { get }
    /// Asks for one `SessionHub.connectionWritable` call when the connection can take data.
    func requestWritable()
    /// Sends what is queued as far as it goes, then the close frame with `code`.
    func close(code: UInt16, reason: String)
}

extension ClientConnection {
    /// Frame by frame, for connections without a socket (in-memory test connections).
    @discardableResult
    public func send(_ frames: PackedFrames) -> Bool {
        var ok = true
        frames.forEachFrame { payload, _ in
            if ok { ok = sendText(payload) }
        }
        return ok
    }

    public var usesCompression: Bool { false }
}

extension WebSocketConnection: ClientConnection {}
