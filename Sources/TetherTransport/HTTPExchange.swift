import CLibWebSockets

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a plain HTTP request made with `WebSocketClient.request` failed: nothing came back, or
/// not in time. An answer with any status is a success of the exchange.
public enum HTTPRequestError: Error, Equatable, CustomStringConvertible {
    case invalidURL(String)
    /// The connection failed or closed before the whole answer arrived, in plain words.
    case failed(String)
    case timedOut
    case notRunning

    public var description: String {
        switch self {
        case .invalidURL(let message): return "invalid URL: \(message)"
        case .failed(let reason): return reason
        case .timedOut: return "no answer in time"
        case .notRunning: return "the client is not running"
        }
    }
}

extension WebSocketClient {
    /// Sends one plain HTTP request (`GET`, `DELETE`) to `path` on the server a WebSocket URL
    /// names (`ws://` becomes `http://`, `wss://` `https://`, with this client's TLS trust), with
    /// an `Authorization` header when given, and returns the answer, whatever its status.
    public func request(_ method: String, path: String, on url: String, authorization: String? = nil,
                        timeout: Duration = .seconds(10)) async throws(HTTPRequestError) -> HTTPResponse {
        let target: WebSocketURL
        do {
            target = try WebSocketURL(parsing: url)
        } catch {
            throw .invalidURL("\(error)")
        }
        let exchange = HTTPExchange(method: method, path: path, authorization: authorization, target: target)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTPResponse, HTTPRequestError>, Never>) in
            exchange.completion = { continuation.resume(returning: $0) }
            let loop = self.loop
            guard loop.execute({ loop.start(exchange) }) else {
                exchange.finish(.failure(.notRunning))
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                _ = loop.execute { exchange.finish(.failure(.timedOut)) }
            }
        }
        return try result.get()
    }
}

/// One HTTP request and its answer, on the client's loop thread.
final class HTTPExchange: @unchecked Sendable {
    let method: String
    let path: String
    let authorization: String?
    let target: WebSocketURL
    var status = 0
    var body: [UInt8] = []
    /// Called once, with the answer or why there is none.
    var completion: ((Result<HTTPResponse, HTTPRequestError>) -> Void)?

    init(method: String, path: String, authorization: String?, target: WebSocketURL) {
        self.method = method
        self.path = path
        self.authorization = authorization
        self.target = target
    }

    func finish(_ result: Result<HTTPResponse, HTTPRequestError>) {
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }
}

extension ClientLoop {
    /// Loop thread: connects for `exchange`, as `startConnecting` does for a WebSocket.
    func start(_ exchange: HTTPExchange) {
        guard phase == .running, let context else {
            exchange.finish(.failure(.notRunning))
            return
        }
        let target = exchange.target
        var flags: Int32 = 0
        if target.secure {
            flags |= TETHER_LCCSCF_USE_SSL
            if configuration.trust == .insecure {
                flags |= TETHER_LCCSCF_ALLOW_SELFSIGNED | TETHER_LCCSCF_ALLOW_INSECURE
                    | TETHER_LCCSCF_ALLOW_EXPIRED | TETHER_LCCSCF_SKIP_HOSTNAME_CHECK
            }
        }
        _ = TransportLog.takeCaptured()
        let strings = [target.host, exchange.path, Self.protocolName, "http/1.1", exchange.method].map { (text: String) in strdup(text) }
        defer { strings.forEach { free($0) } }
        var info = lws_client_connect_info()
        info.context = context
        info.address = UnsafePointer(strings[0])
        info.port = Int32(target.port)
        info.ssl_connection = flags
        info.path = UnsafePointer(strings[1])
        info.host = UnsafePointer(strings[0])
        info.local_protocol_name = UnsafePointer(strings[2])
        info.alpn = UnsafePointer(strings[3])
        info.method = UnsafePointer(strings[4])
        info.retry_and_idle_policy = UnsafePointer(retryPolicy)
        guard let wsi = lws_client_connect_via_info(&info) else {
            let lines = TransportLog.takeCaptured()
            exchange.finish(.failure(.failed(ConnectionFailure(lwsReason: lines.last ?? "", details: lines, target: target).explanation)))
            return
        }
        httpExchanges[wsi] = exchange
    }

    /// The callbacks of HTTP requests' connections; nil for other connections.
    func handleHTTP(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32? {
        guard let exchange = httpExchanges[wsi] else { return nil }
        switch reason {
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            guard let authorization = exchange.authorization, let input else { return 0 }
            let cursor = input.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
            guard let start = cursor.pointee else { return -1 }
            let value = Array(authorization.utf8)
            let failed = value.withUnsafeBufferPointer {
                lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, $0.baseAddress, Int32($0.count), cursor, start + len)
            }
            return failed == 0 ? 0 : -1
        case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
            exchange.status = Int(lws_http_client_http_response(wsi))
            return 0
        case LWS_CALLBACK_RECEIVE_CLIENT_HTTP:
            // lws hands the body over in LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ, from this buffer.
            let pre = Int(TETHER_LWS_PRE)
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: pre + 4096) { buffer -> Int32 in
                var start: UnsafeMutablePointer<CChar>? = buffer.baseAddress! + pre
                var length: Int32 = 4096
                return lws_http_client_read(wsi, &start, &length) < 0 ? -1 : 0
            }
        case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
            if let input, len > 0 { exchange.body.append(contentsOf: UnsafeRawBufferPointer(start: input, count: len)) }
            return 0
        case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
            exchange.finish(.success(HTTPResponse(status: exchange.status, body: exchange.body)))
            return 0
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            let reason = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""
            let failure = ConnectionFailure(lwsReason: reason, details: TransportLog.takeCaptured(), target: exchange.target)
            exchange.finish(.failure(.failed(failure.explanation)))
            return 0
        case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
            exchange.finish(.failure(.failed("\(exchange.target.host):\(exchange.target.port) closed the connection before its answer was complete")))
            return 0
        case LWS_CALLBACK_WSI_DESTROY:
            httpExchanges[wsi] = nil
            exchange.finish(.failure(.failed("the connection to \(exchange.target.host):\(exchange.target.port) ended without an answer")))
            return 0
        default:
            return nil
        }
    }
}
