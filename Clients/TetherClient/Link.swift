import DequeModule
import Dispatch
import TetherProtocol
import TetherTransport

/// The socket-thread half of a client connection: decodes what arrives, queues what leaves, and
/// hands events to the main actor in order.
///
/// Threading rule: the delegate callbacks and `outbox` run on the transport's service thread;
/// `send` and `close` may be called from anywhere (they post to that thread).
final class Link: WebSocketClientDelegate, @unchecked Sendable {
    enum Event: Sendable {
        case opened
        case failed(String)
        case message(ServerMessage, raw: [UInt8])
        /// A frame that did not decode: nothing the server sends may crash the client.
        case undecodable(ProtocolError, raw: [UInt8])
        case closed(code: UInt16?)
    }

    private let transport: WebSocketClient
    private let onEvent: @Sendable (Event) -> Void
    /// Socket thread only.
    private var connection: WebSocketConnection?
    private var outbox: Deque<[UInt8]> = []

    init(transport: WebSocketClient, onEvent: @escaping @Sendable (Event) -> Void) {
        self.transport = transport
        self.onEvent = onEvent
    }

    func start(url: String, compression: Bool) throws {
        connection = try transport.connect(url: url, subprotocol: TetherProtocol.subprotocol, compression: compression, delegate: self)
    }

    func send(_ frame: [UInt8]) {
        transport.execute { [self] in
            guard let connection, connection.isOpen else { return }
            let wasEmpty = outbox.isEmpty
            outbox.append(frame)
            if wasEmpty { connection.requestWritable() }
        }
    }

    func close() {
        transport.execute { [self] in connection?.close(code: 1000, reason: "client closing") }
    }

    /// Delivers on the main actor, in order.
    private func deliver(_ event: Event) {
        onEvent(event)
    }

    // MARK: WebSocketClientDelegate (socket thread)

    func clientConnected(_ connection: WebSocketConnection) { deliver(.opened) }

    func clientConnectFailed(_ connection: WebSocketConnection, reason: String) {
        self.connection = nil
        deliver(.failed(reason))
    }

    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) {
        let raw = Array(payload)
        do {
            deliver(.message(try ServerMessage.decode(payload), raw: raw))
        } catch {
            deliver(.undecodable(error, raw: raw))
        }
    }

    func connection(_ connection: WebSocketConnection, receivedBinary payload: UnsafeRawBufferPointer) {
        deliver(.undecodable(ProtocolError(.badMessage, "the server sent a binary frame"), raw: Array(payload)))
    }

    func connectionWritable(_ connection: WebSocketConnection) {
        while let frame = outbox.first, !connection.isChoked {
            guard frame.withUnsafeBytes({ connection.sendText($0) }) else { outbox.removeAll(); return }
            outbox.removeFirst()
        }
        if !outbox.isEmpty { connection.requestWritable() }
    }

    func connectionClosed(_ connection: WebSocketConnection, code: UInt16?) {
        self.connection = nil
        outbox.removeAll()
        deliver(.closed(code: code))
    }
}
