import Logging
import Synchronization
import TetherTransport

/// One libwebsockets client context per process (per trust setting), shared by every
/// `TetherClient`: lws keeps process-wide state (logging, OpenSSL indexes) that several contexts
/// alive at once trip over. It runs until the process exits.
enum SharedTransport {
    private static let clients = Mutex<[String: WebSocketClient]>([:])

    static func client(trust: TLSTrust, maxMessageBytes: Int, logger: Logger) throws -> WebSocketClient {
        let key = "\(trust)|\(maxMessageBytes)"
        return try clients.withLock { clients in
            if let client = clients[key] { return client }
            var configuration = WebSocketClientConfiguration()
            configuration.trust = trust
            configuration.maxMessageBytes = maxMessageBytes
            let client = WebSocketClient(configuration: configuration, logger: logger)
            try client.start()
            clients[key] = client
            return client
        }
    }
}
