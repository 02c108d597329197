import TetherJSON
import TetherProtocol
import TetherTransport

/// A room's stream as Server-Sent Events, for consumers that cannot speak WebSocket: a hub
/// session like any other (gapless patches, resume, a slow reader resynced or closed), whose
/// frames are written as events. `id` is `EPOCH.VERSION`, so a reconnect with `Last-Event-ID`
/// resumes where it left. Used on the hub's queue only.
// @unchecked: confined to the hub's queue (the shard's thread, which is also its stream's).
final class SSEConnection: ClientConnection, @unchecked Sendable {
    let remoteAddress: String
    var context: AnyObject?
    var isOpen: Bool { !ended && (stream?.isOpen ?? true) }
    var isChoked: Bool { stream?.isChoked ?? false }

    private let room: String
    private let responder: HTTPResponder
    private let hub: SessionHub
    private var stream: HTTPStream?
    private var ended = false
    private var writableRequested = false

    static let keepaliveSeconds = 15
    /// Server-sent messages that are not events: the session's hello, the join's ack.
    private static let silent: Set<String> = ["hello", "ack"]

    init(room: String, from remoteAddress: String, hub: SessionHub, responder: HTTPResponder) {
        self.room = room
        self.remoteAddress = remoteAddress
        self.hub = hub
        self.responder = responder
    }

    func start(join: ClientMessage) {
        hub.connectionOpened(self)
        guard isOpen else { return }
        join.encoded().withUnsafeBytes { hub.connection(self, receivedText: $0) }
    }

    func sendText(_ payload: UnsafeRawBufferPointer) -> Bool {
        guard isOpen else { return false }
        guard case .object(let fields)? = try? JSONParser().parse(payload), let type = fields["type"]?.stringValue else { return true }
        if Self.silent.contains(type) { return true }
        if stream == nil {
            // Before the stream starts, a refusal is the HTTP answer.
            if type == "error" {
                finish(APIError.response(APIExchange.error(fields)))
                return false
            }
            guard open() else { return false }
        }
        var event = "event: \(type)\n"
        if type == "snapshot" || type == "patch", let epoch = fields["epoch"]?.stringValue, let version = fields["version"]?.intValue {
            event += "id: \(epoch).\(version)\n"
        }
        var bytes = Array(event.utf8) + Array("data: ".utf8)
        bytes.append(contentsOf: payload)
        bytes.append(contentsOf: Array("\n\n".utf8))
        let written = bytes.withUnsafeBytes { stream!.write($0) }
        // An error ends the room's stream (room deleted, a refusal): so does the response.
        if type == "error" { stream?.close() }
        return written
    }

    private func open() -> Bool {
        let head = HTTPResponse(status: 200, contentType: "text/event-stream", body: [],
                                headers: ["Cache-Control": "no-store", "X-Accel-Buffering": "no", "X-Content-Type-Options": "nosniff"])
        guard let stream = responder.stream(head) else {
            finish(nil)
            return false
        }
        stream.keepalive = (Self.keepaliveSeconds, Array(": keepalive\n\n".utf8))
        stream.onWritable = { [hub, self] in hub.connectionWritable(self) }
        stream.onClosed = { [hub, self] in
            self.ended = true
            hub.connectionClosed(self)
        }
        self.stream = stream
        // Reconnect after 2 s when the stream drops.
        _ = Array("retry: 2000\n\n".utf8).withUnsafeBytes { stream.write($0) }
        return true
    }

    func requestWritable() {
        if let stream { return stream.requestWritable() }
        // Before the stream: what is queued (the join's outcome) is taken at the next turn.
        guard !ended, !writableRequested else { return }
        writableRequested = true
        hub.queue.execute { [hub, self] in
            writableRequested = false
            hub.connectionWritable(self)
        }
    }

    func close(code: UInt16, reason: String) {
        guard isOpen else { return }
        if let stream {
            stream.close()
        } else {
            finish(APIError.response(ProtocolError(.unavailable, reason.isEmpty ? "closed" : reason, room: room)))
        }
    }

    /// Ends a session that never streamed, answering `answer`.
    private func finish(_ answer: HTTPResponse?) {
        guard !ended else { return }
        ended = true
        if let answer { responder.respond(answer) }
        hub.queue.execute { [hub, self] in hub.connectionClosed(self) }
    }
}
