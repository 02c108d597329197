import TetherJSON
import TetherProtocol
import TetherTransport

/// Runs one `APIExchange` against a socket shard's hub, as a connection of its own: the hub
/// admits, counts and routes it as it would a WebSocket client, so an HTTP action takes the
/// WebSocket action's path (tokens, limits, numbered actions, forwarding to a cluster's owner).
/// Used on the hub's queue only.
// @unchecked: confined to the hub's queue, which its timer hops back onto.
final class APIExchangeConnection: ClientConnection, @unchecked Sendable {
    let remoteAddress: String
    var context: AnyObject?
    private(set) var isOpen = true
    var isChoked: Bool { false }

    private var exchange: APIExchange
    private let responder: HTTPResponder
    private let hub: SessionHub
    private var deadline: (any ServerTimer)?
    private var writableRequested = false

    init(_ exchange: APIExchange, from remoteAddress: String, hub: SessionHub, responder: HTTPResponder) {
        self.exchange = exchange
        self.remoteAddress = remoteAddress
        self.hub = hub
        self.responder = responder
    }

    /// Opens the session, sends the exchange's messages, and answers 504 if nothing decides in `timeout`.
    func start(timeout: Duration) {
        hub.connectionOpened(self)
        for message in exchange.opening where isOpen && !exchange.answered {
            message.encoded().withUnsafeBytes { hub.connection(self, receivedText: $0) }
        }
        guard isOpen else { return }
        let seconds = Int(timeout.components.seconds)
        deadline = hub.rooms.runtime.clock.startTimer(every: timeout) { [hub, self] in
            hub.queue.execute {
                if let answer = self.exchange.timedOut(after: seconds) { self.finish(answer) }
            }
        }
    }

    func sendText(_ payload: UnsafeRawBufferPointer) -> Bool {
        guard isOpen else { return false }
        if let message = try? JSONParser().parse(payload), let answer = exchange.received(message) { finish(answer) }
        return true
    }

    /// Never choked: what is queued is taken at the next turn of the hub's queue.
    func requestWritable() {
        guard isOpen, !writableRequested else { return }
        writableRequested = true
        hub.queue.execute { [hub, self] in
            writableRequested = false
            hub.connectionWritable(self)
        }
    }

    /// The hub closes it (a limit, shutdown): answered if it was not yet.
    func close(code: UInt16, reason: String) {
        guard isOpen else { return }
        finish(exchange.closed() ?? APIError.json(503, [:]))
    }

    private func finish(_ answer: HTTPResponse) {
        guard isOpen else { return }
        isOpen = false
        deadline?.cancel()
        deadline = nil
        responder.respond(answer)
        // As the transport tells of a closed socket: later, not inside the hub's own call.
        hub.queue.execute { [hub, self] in hub.connectionClosed(self) }
    }
}
