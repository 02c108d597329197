import Foundation
import Synchronization
import TetherTransport

/// An in-process WebSocket server that says exactly what a test scripts, to show how a client
/// copes with what a real `tetherd` never sends (gaps, patches that don't apply, garbage).
public final class ScriptedServer: WebSocketServerDelegate, @unchecked Sendable {
    public let server: WebSocketServer
    public private(set) var port = 0
    /// Called on the server's thread for each text message; return the frames to send back.
    private let respond: @Sendable (String) -> [String]
    private let state = Mutex<(received: [String], connections: Int)>(([], 0))
    /// Socket thread only.
    private var outboxes: [UInt64: [String]] = [:]
    private var connections: [UInt64: WebSocketConnection] = [:]
    private let greeting: [String]

    public init(greeting: [String], respond: @escaping @Sendable (String) -> [String]) throws {
        var configuration = WebSocketServerConfiguration()
        configuration.port = 0
        server = WebSocketServer(configuration: configuration)
        self.greeting = greeting
        self.respond = respond
        port = try server.start(delegate: self)
    }

    public var url: String { "ws://127.0.0.1:\(port)" }
    public var received: [String] { state.withLock { $0.received } }
    public var connectionCount: Int { state.withLock { $0.connections } }

    /// Sends `frames` to every open connection.
    public func broadcast(_ frames: [String]) {
        server.execute { [self] in
            for (id, connection) in connections { queue(frames, id, connection) }
        }
    }

    /// Drops every connection without a close frame's courtesy (code 1001).
    public func dropAll() {
        server.execute { [self] in
            for connection in connections.values { connection.close(code: 1001, reason: "scripted drop") }
        }
    }

    public func stop() { server.shutdown(deadline: .seconds(1)) }

    private func queue(_ frames: [String], _ id: UInt64, _ connection: WebSocketConnection) {
        outboxes[id, default: []].append(contentsOf: frames)
        connection.requestWritable()
    }

    /// Alive, as tetherd's `/healthz` says (tools check it before connecting).
    public func httpRequest(_ request: HTTPRequest, responder: HTTPResponder) {
        responder.respond(request.method == "GET" && request.path == "/healthz" ? HTTPResponse(status: 200, text: "ok") : .notFound)
    }

    public func connectionOpened(_ connection: WebSocketConnection) {
        connections[connection.id] = connection
        state.withLock { $0.connections += 1 }
        queue(greeting, connection.id, connection)
    }

    public func connectionClosed(_ connection: WebSocketConnection) {
        connections[connection.id] = nil
        outboxes[connection.id] = nil
    }

    public func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) {
        let text = String(decoding: payload, as: UTF8.self)
        state.withLock { $0.received.append(text) }
        queue(respond(text), connection.id, connection)
    }

    public func connectionWritable(_ connection: WebSocketConnection) {
        var frames = outboxes[connection.id] ?? []
        while !frames.isEmpty, !connection.isChoked {
            connection.sendText(frames.removeFirst())
        }
        outboxes[connection.id] = frames
        if !frames.isEmpty { connection.requestWritable() }
    }
}
