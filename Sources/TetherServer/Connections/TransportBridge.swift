import TetherTransport

/// Connects one socket shard of the libwebsockets server to its hub and the HTTP routes: the
/// shard's delegate. Runs on the shard's service thread, which is the hub's queue (hence
/// `@unchecked Sendable`, under the hub's threading rule).
final class TransportBridge: WebSocketServerDelegate, @unchecked Sendable {
    let hub: SessionHub
    let routes: HTTPRoutes

    init(hub: SessionHub, routes: HTTPRoutes) {
        self.hub = hub
        self.routes = routes
    }

    func connectionOpened(_ connection: WebSocketConnection) { hub.connectionOpened(connection) }
    func connectionClosed(_ connection: WebSocketConnection) { hub.connectionClosed(connection, closeCode: connection.closeCode) }
    func connectionWritable(_ connection: WebSocketConnection) { hub.connectionWritable(connection) }

    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) {
        hub.connection(connection, receivedText: payload)
    }

    func connection(_ connection: WebSocketConnection, receivedBinary payload: UnsafeRawBufferPointer) {
        hub.connectionReceivedBinary(connection)
    }

    func httpRequest(_ request: HTTPRequest, responder: HTTPResponder) { routes.answer(request, responder: responder) }
    func allowedMethods(forPath path: String) -> String? { routes.allowedMethods(forPath: path) }
    func willShutdown() { hub.willShutdown() }
    func didRunQueuedWork() { hub.didRunQueuedWork() }
}

/// A socket shard's service thread as its hub's queue.
struct TransportQueue: WorkQueue {
    let server: WebSocketServer
    let shard: Int

    func execute(_ work: @escaping @Sendable () -> Void) {
        server.execute(onShard: shard, work)
    }
}
