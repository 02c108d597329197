/// Errors thrown by the transport's synchronous entry points. Everything that happens on a
/// connection after it was started is reported through the delegates instead.
public enum TransportError: Error, Equatable, CustomStringConvertible {
    /// `WebSocketClient.connect(url:)` got a URL it cannot use.
    case invalidURL(String)
    /// Another socket is bound to the server's address and port.
    case addressInUse(String)
    /// The server could not listen (permission denied, bad address...).
    case cannotListen(String)
    /// The TLS certificate, key or CA file is missing, unreadable or rejected.
    case tls(String)
    /// The lws context could not be created for another reason.
    case startFailed(String)
    /// `start()` was called twice.
    case alreadyStarted
    /// The object is not running (never started, or already shut down).
    case notRunning

    public var description: String {
        switch self {
        case .invalidURL(let message): return "invalid URL: \(message)"
        case .addressInUse(let address): return "\(address) is already in use"
        case .cannotListen(let message): return "cannot listen: \(message)"
        case .tls(let message): return "TLS: \(message)"
        case .startFailed(let message): return "transport failed to start: \(message)"
        case .alreadyStarted: return "already started"
        case .notRunning: return "not running"
        }
    }
}

/// Certificate chain and private key (PEM files) for a wss:// server.
public struct TLSFiles: Sendable, Equatable {
    public var certificatePath: String
    public var privateKeyPath: String

    public init(certificatePath: String, privateKeyPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
    }
}

/// How a client decides whether to trust a wss:// server's certificate.
public enum TLSTrust: Sendable, Equatable {
    /// The operating system's CA store, with host name checking.
    case system
    /// Only the CA certificate(s) in this PEM file (plus the system store), with host name checking.
    case caFile(String)
    /// Accept any certificate (self-signed, unknown issuer, expired, wrong host). Tests and local
    /// development only: the connection is encrypted but not authenticated.
    case insecure
}

/// A plain HTTP request on the WebSocket port (not an upgrade): a GET, a DELETE or a POST (with
/// its whole body, up to `maxHTTPBodyBytes`); other methods are answered 405 by the transport.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// Without the query string, percent-decoded by lws (`/rooms/a%3Ab` arrives as `/rooms/a:b`).
    public var path: String
    /// The `Authorization` header, when sent.
    public var authorization: String?
    /// A POST's body; empty otherwise.
    public var body: [UInt8]
    /// The query string's arguments as sent, `&`-separated, percent-decoded by lws; nil without one.
    public var query: String?
    /// The headers an API reads (`HTTPRequest.readHeaders`, names in lower case); no other
    /// header is copied.
    public var headers: [String: String]
    /// The peer's IP address.
    public var remoteAddress: String

    /// The request headers the transport hands on (besides `Authorization`).
    public static let readHeaders = ["content-type", "accept", "if-none-match", "idempotency-key", "tether-client", "last-event-id"]

    public init(method: String, path: String, authorization: String? = nil, body: [UInt8] = [], query: String? = nil,
                headers: [String: String] = [:], remoteAddress: String = "") {
        self.remoteAddress = remoteAddress
        self.method = method
        self.path = path
        self.authorization = authorization
        self.body = body
        self.query = query
        self.headers = headers
    }
}

/// Answers one HTTP request, once: inside the delegate's call, or later from any thread (an
/// answer that needs a network round trip). A request left unanswered is closed by lws after
/// the handshake timeout.
public struct HTTPResponder: Sendable {
    let answer: @Sendable (HTTPResponse) -> Void
    let startStream: (@Sendable (HTTPResponse) -> HTTPStream?)?

    public init(_ answer: @escaping @Sendable (HTTPResponse) -> Void, stream: (@Sendable (HTTPResponse) -> HTTPStream?)? = nil) {
        self.answer = answer
        self.startStream = stream
    }

    public func respond(_ response: HTTPResponse) { answer(response) }

    /// Answers with `head`'s status and headers and a body written later, piece by piece. On the
    /// server loop's thread only (the delegate's call, or work queued on that shard); nil where
    /// the request no longer waits or the responder cannot stream.
    public func stream(_ head: HTTPResponse) -> HTTPStream? { startStream?(head) }
}

/// A plain HTTP answer on the WebSocket port: to a GET (`/healthz`, `/metrics`, files) or a
/// DELETE, or a refused WebSocket upgrade.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    /// Further headers by name ("Content-Security-Policy"); Content-Type and Content-Length are
    /// written from the fields above.
    public var headers: [String: String]

    public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: [UInt8], headers: [String: String] = [:]) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    public init(status: Int, contentType: String = "text/plain; charset=utf-8", text: String, headers: [String: String] = [:]) {
        self.init(status: status, contentType: contentType, body: Array(text.utf8), headers: headers)
    }

    public static let notFound = HTTPResponse(status: 404, text: "not found\n")
}

public struct WebSocketServerConfiguration: Sendable {
    /// Address to listen on: an IPv4/IPv6 literal, "localhost", "0.0.0.0" / "::" / "" for every
    /// interface, or an interface name such as "lo".
    public var host: String = "127.0.0.1"
    /// 0 lets the OS pick; `WebSocketServer.start` returns the bound port.
    public var port: Int = 8080
    /// The WebSocket subprotocol served. Clients offering none are accepted too; clients offering
    /// only other subprotocols get HTTP 400 naming it.
    public var subprotocol: String = "tether.v1"
    /// Which web pages may open a WebSocket (by the upgrade's `Origin`); refused ones get 403.
    public var allowedOrigins: OriginPolicy = .ownOriginOnly
    /// A message (all fragments together) larger than this closes the connection with 1009.
    public var maxMessageBytes: Int = 1 << 20
    /// A POST body larger than this is answered 413 (at once when its Content-Length says so).
    public var maxHTTPBodyBytes: Int = 1 << 20
    /// Open WebSocket connections beyond this are refused at accept time (TCP close) without
    /// affecting the others. The fd table is sized from it, below RLIMIT_NOFILE.
    public var maxConnections: Int = 10_000
    /// Certificate + key => wss:// (OpenSSL). nil => plain ws://.
    public var tls: TLSFiles? = nil
    /// Send a WebSocket PING after this long without traffic from the peer (nil: never).
    public var pingInterval: Duration? = .seconds(30)
    /// Hang up a peer that sent nothing (not even a PONG) for this long (nil: never).
    public var idleTimeout: Duration? = .seconds(75)
    /// Time allowed for the HTTP request / WebSocket handshake (and TLS handshake) to complete.
    public var handshakeTimeout: Duration = .seconds(10)
    /// Invalid UTF-8 in a text message closes the connection with 1007.
    public var validateUTF8: Bool = true
    /// Accept permessage-deflate from clients that offer it (`WebSocketConnection.usesCompression`).
    /// The server never compresses per connection: it sends frames compressed once
    /// (`MessageDeflater`) as they are; lws inflates what such clients send.
    public var compression: Bool = false
    /// Socket shards: service threads that each own a share of the connections. With one, its
    /// context listens itself; with more, one accepting thread hands new sockets out in turn.
    public var ioThreads: Int = 1

    public init() {}

    public init(
        host: String = "127.0.0.1", port: Int = 8080, subprotocol: String = "tether.v1",
        maxMessageBytes: Int = 1 << 20, maxConnections: Int = 10_000, tls: TLSFiles? = nil,
        pingInterval: Duration? = .seconds(30), idleTimeout: Duration? = .seconds(75),
        handshakeTimeout: Duration = .seconds(10), validateUTF8: Bool = true
    ) {
        self.host = host
        self.port = port
        self.subprotocol = subprotocol
        self.maxMessageBytes = maxMessageBytes
        self.maxConnections = maxConnections
        self.tls = tls
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.handshakeTimeout = handshakeTimeout
        self.validateUTF8 = validateUTF8
    }
}

public struct WebSocketClientConfiguration: Sendable {
    /// A message from the server larger than this closes the connection with 1009.
    public var maxMessageBytes: Int = 1 << 20
    /// Trust for wss:// URLs.
    public var trust: TLSTrust = .system
    /// Send a PING after this long without traffic from the server (nil: never).
    public var pingInterval: Duration? = .seconds(30)
    /// Hang up when the server sent nothing (not even a PONG) for this long (nil: never).
    public var idleTimeout: Duration? = .seconds(75)
    /// Time allowed for TCP connect + TLS + WebSocket handshake.
    public var connectTimeout: Duration = .seconds(10)
    /// Upper bound of simultaneous connections this client will hold (sizes the fd table).
    public var maxConnections: Int = 10_000
    /// Invalid UTF-8 in a text message from the server closes the connection with 1007.
    public var validateUTF8: Bool = true
    /// Offer permessage-deflate on new connections (lws inflates what the server compressed).
    /// `connect(url:subprotocol:compression:delegate:)` can choose per connection.
    public var compression: Bool = false

    public init() {}

    public init(
        maxMessageBytes: Int = 1 << 20, trust: TLSTrust = .system,
        pingInterval: Duration? = .seconds(30), idleTimeout: Duration? = .seconds(75),
        connectTimeout: Duration = .seconds(10), maxConnections: Int = 10_000,
        validateUTF8: Bool = true
    ) {
        self.maxMessageBytes = maxMessageBytes
        self.trust = trust
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.connectTimeout = connectTimeout
        self.maxConnections = maxConnections
        self.validateUTF8 = validateUTF8
    }
}

// MARK: - Delegates

/// Events shared by server and client connections. All calls happen on the owning server's or
/// client's service thread (see `WebSocketServer` for the threading rule).
public protocol WebSocketConnectionDelegate: AnyObject {
    /// One whole text message (fragments reassembled). The buffer is only valid during the call.
    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer)
    /// One whole binary message. The buffer is only valid during the call.
    func connection(_ connection: WebSocketConnection, receivedBinary payload: UnsafeRawBufferPointer)
    /// The socket can take more data: write frames with `sendText` while `!isChoked`, and call
    /// `requestWritable()` again if frames remain. May be called when nothing is queued.
    func connectionWritable(_ connection: WebSocketConnection)
}

extension WebSocketConnectionDelegate {
    /// Default: binary messages are ignored.
    public func connection(_ connection: WebSocketConnection, receivedBinary payload: UnsafeRawBufferPointer) {}
}

/// Server events, all on the server's service thread.
public protocol WebSocketServerDelegate: WebSocketConnectionDelegate {
    /// A WebSocket handshake completed. Attach session state to `connection.context`.
    func connectionOpened(_ connection: WebSocketConnection)
    /// Called exactly once for every opened connection, whoever closed it and however
    /// (peer close, error, idle timeout, shutdown). `connection.closeCode` holds the close code
    /// sent or received, if any. The connection can no longer send.
    func connectionClosed(_ connection: WebSocketConnection)
    /// A plain HTTP GET or DELETE on the WebSocket port; answer it through `responder`, now or
    /// later. A DELETE from a page of a foreign origin is refused (403) before it gets here.
    func httpRequest(_ request: HTTPRequest, responder: HTTPResponder)
    /// The methods `path` takes, for an `OPTIONS` answer's `Allow` (nil: every method served).
    func allowedMethods(forPath path: String) -> String?
    /// Shutdown started: new connections are refused. Queue any final messages and call
    /// `requestWritable()` on the connections that have some; they get `connectionWritable`
    /// until their queues are empty (or the drain time ends), then close with 1001.
    func willShutdown()
    /// A batch of work given to `execute` has run (everything that was waiting when the loop
    /// woke). Work that queued frames can flush them here, once per batch: under load a batch
    /// holds many posts, and their frames merge.
    func didRunQueuedWork()
}

extension WebSocketServerDelegate {
    public func didRunQueuedWork() {}
    public func httpRequest(_ request: HTTPRequest, responder: HTTPResponder) { responder.respond(.notFound) }
    public func allowedMethods(forPath path: String) -> String? { nil }
    public func willShutdown() {}
}

/// Client events, all on the client's service thread. For every `connect` exactly one of
/// `clientConnectFailed` or `clientConnected` is called, and after `clientConnected` exactly one
/// `connectionClosed`.
public protocol WebSocketClientDelegate: WebSocketConnectionDelegate {
    func clientConnected(_ connection: WebSocketConnection)
    /// Unreachable host, refused, TLS failure, handshake rejected, timeout: one line saying why.
    func clientConnectFailed(_ connection: WebSocketConnection, reason: String)
    /// `code` is the close code received from (or sent to) the server; nil when the connection
    /// ended without a close frame (1006).
    func connectionClosed(_ connection: WebSocketConnection, code: UInt16?)
}
