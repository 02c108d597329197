import TetherServer

/// A client connection in memory: the hub writes frames into `sent`; a test reads them, chokes
/// the connection to play a slow client, and sees closes. Used on the test's thread only.
public final class TestConnection: ClientConnection, @unchecked Sendable {
    public let remoteAddress: String
    public var context: AnyObject?
    public private(set) var isOpen = true
    /// A choked connection takes no frames: the hub must wait for a writable call.
    public var isChoked = false
    /// Frames written, oldest first, not yet taken by the test.
    public private(set) var sent: [[UInt8]] = []
    /// Whether the hub asked for a writable call.
    public internal(set) var wantsWritable = false
    /// The close code the server sent, once it closed the connection.
    public private(set) var closeCode: UInt16?
    public private(set) var closeReason: String?
    /// Set when the hub has heard that the connection is gone.
    var isFinished = false

    public init(remoteAddress: String = "127.0.0.1") {
        self.remoteAddress = remoteAddress
    }

    @discardableResult
    public func sendText(_ payload: UnsafeRawBufferPointer) -> Bool {
        guard isOpen || closeCode != nil, !isFinished else { return false }
        sent.append(Array(payload))
        return true
    }

    public func requestWritable() {
        guard !isFinished else { return }
        wantsWritable = true
    }

    public func close(code: UInt16, reason: String) {
        guard isOpen else { return }
        isOpen = false
        closeCode = code
        closeReason = reason
    }

    /// The frames written since the last call.
    public func takeSent() -> [[UInt8]] {
        defer { sent.removeAll() }
        return sent
    }

    /// The peer went away (a dropped TCP connection): no close frame.
    func peerDisconnected() {
        isOpen = false
    }
}
