import CLibWebSockets
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// WebSocket client connections (ws:// and wss://). One client = one lws context and one service
/// thread, which can hold many connections (thousands, for load generation).
///
/// Threading: same rule as `WebSocketServer`: every delegate callback runs on the client's
/// service thread; other threads only call `connect`, `execute` and `shutdown`.
public final class WebSocketClient: Sendable {
    public let configuration: WebSocketClientConfiguration
    let loop: ClientLoop

    public init(configuration: WebSocketClientConfiguration = .init(),
                logger: Logger = Logger(label: "tether.transport.client")) {
        self.configuration = configuration
        self.loop = ClientLoop(configuration: configuration, logger: logger)
    }

    deinit {
        loop.shutdown(deadline: .zero)
    }

    /// Creates the context and starts the service thread. Throws `.tls` if the CA file cannot be
    /// read, `.alreadyStarted` on a second call.
    public func start() throws {
        try loop.start()
    }

    /// Starts connecting to `url` (`ws://host[:port][/path]` or `wss://...`), offering
    /// `subprotocol` (nil: offer none) and, with `compression` (default: the configuration's),
    /// permessage-deflate. Returns at once; the outcome arrives on `delegate` (exactly one of
    /// `clientConnectFailed` / `clientConnected`, see `WebSocketClientDelegate`).
    /// The client keeps `delegate` alive until the connection's last callback.
    /// Throws `TransportError.invalidURL` for a URL it cannot use, `.notRunning` if not started.
    @discardableResult
    /// `localAddress`: the IP address the connection's socket is bound to (nil: the system's
    /// choice), e.g. one of several loopback addresses, so tens of thousands of connections to
    /// one port don't share one address's ephemeral ports.
    public func connect(url: String, subprotocol: String? = "tether.v1", compression: Bool? = nil, localAddress: String? = nil,
                        delegate: any WebSocketClientDelegate) throws -> WebSocketConnection {
        let target = try WebSocketURL(parsing: url)
        if let subprotocol, subprotocol.isEmpty || !subprotocol.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) {
            throw TransportError.invalidURL("invalid subprotocol '\(subprotocol)'")
        }
        let connection = WebSocketConnection(
            id: loop.connectionIDs.wrappingAdd(1, ordering: .relaxed).oldValue,
            remoteAddress: target.host,
            subprotocol: subprotocol,
            loop: loop,
            owner: .client(delegate))
        connection.pendingConnect = PendingConnect(endpoint: target.description, timeout: configuration.connectTimeout)
        connection.pendingConnect?.localAddress = localAddress
        connection.usesCompression = compression ?? configuration.compression
        let loop = self.loop
        guard loop.execute({ loop.startConnecting(connection, to: target) }) else {
            throw TransportError.notRunning
        }
        return connection
    }

    /// Runs `work` on the service thread (FIFO). Returns false, dropping `work`, when the client
    /// is not running.
    @discardableResult
    public func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        loop.execute(work)
    }

    /// Closes every open connection with 1000, waits for the close handshakes up to `deadline`,
    /// then destroys the context and joins the service thread. Connections still connecting get
    /// `clientConnectFailed`, open ones `connectionClosed`.
    public func shutdown(deadline: Duration = .seconds(2)) {
        loop.shutdown(deadline: deadline)
    }

    /// `shutdown(deadline:)` for async code: waits without blocking a concurrency thread.
    public func shutdownAsync(deadline: Duration = .seconds(2)) async {
        let loop = self.loop
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            detachThread {
                loop.shutdown(deadline: deadline)
                continuation.resume()
            }
        }
    }
}

final class ClientLoop: ServiceLoop, @unchecked Sendable {
    let configuration: WebSocketClientConfiguration
    static let protocolName = "tether-client"
    /// Plain HTTP requests in flight, by connection (HTTPExchange.swift); loop thread only.
    var httpExchanges: [OpaquePointer: HTTPExchange] = [:]

    init(configuration: WebSocketClientConfiguration, logger: Logger) {
        self.configuration = configuration
        super.init(logger: logger, threadName: "tether-ws-cli", maxMessageBytes: configuration.maxMessageBytes,
                   validatesUTF8: configuration.validateUTF8)
    }

    func start() throws {
        try claimStart()
        do {
            try startContext()
        } catch {
            releaseStart()
            throw error
        }
    }

    private func startContext() throws {
        TransportLog.configureIfNeeded(logger: logger)
        let config = configuration
        if case .caFile(let path) = config.trust, access(path, R_OK) != 0 {
            throw TransportError.tls("cannot read CA file '\(path)': \(String(cString: strerror(errno)))")
        }
        let protocols = makeProtocols(name: Self.protocolName)
        var info = baseContextInfo(fdLimit: max(1, config.maxConnections))
        info.port = -1  // CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(protocols)
        info.options = TETHER_OPT_DO_SSL_GLOBAL_INIT  // UTF-8: validated by us (`UTF8Validator`)
        let timeout = UInt32(clamping: max(1, wholeSeconds(config.connectTimeout)))
        info.timeout_secs = timeout
        info.connect_timeout_secs = timeout
        info.alpn = keepCString("http/1.1")
        // Offered per connection (LWS_CALLBACK_CLIENT_CONFIRM_EXTENSION_SUPPORTED).
        info.extensions = makeDeflateExtension()
        if case .caFile(let path) = config.trust {
            info.client_ssl_ca_filepath = keepCString(path)
        }
        _ = makeRetryPolicy(ping: config.pingInterval, idle: config.idleTimeout)

        TransportLog.beginCapture()
        defer { TransportLog.endCapture() }
        guard let context = createContext(&info) else {
            let lines = TransportLog.takeCaptured()
            destroyUnstartedContext(nil)
            if case .caFile = config.trust {
                throw TransportError.tls(explain(lines, fallback: "the CA file was rejected"))
            }
            throw TransportError.startFailed(explain(lines, fallback: "lws_create_context failed"))
        }
        try startThread(context: context)
    }

    /// Loop thread: hands one connection to lws.
    func startConnecting(_ connection: WebSocketConnection, to target: WebSocketURL) {
        guard !connection.isFinished else { return }
        if phase != .running {
            connection.pendingConnect?.failureReason = "client is shutting down"
            connection.finish()
            return
        }
        if connection.pendingConnect?.failureReason != nil {  // cancelled before we got here
            connection.finish()
            return
        }
        guard let context else {
            connection.pendingConnect?.failureReason = "client is not running"
            connection.finish()
            return
        }
        var flags: Int32 = 0
        if target.secure {
            flags |= TETHER_LCCSCF_USE_SSL
            if configuration.trust == .insecure {
                flags |= TETHER_LCCSCF_ALLOW_SELFSIGNED | TETHER_LCCSCF_ALLOW_INSECURE
                    | TETHER_LCCSCF_ALLOW_EXPIRED | TETHER_LCCSCF_SKIP_HOSTNAME_CHECK
            }
        }
        _ = TransportLog.takeCaptured()  // lines from earlier events are not about this one
        let address = strdup(target.host)
        let path = strdup(target.path)
        let localProtocol = strdup(Self.protocolName)
        let offered = connection.subprotocol.map { strdup($0) }
        let alpn = strdup("http/1.1")
        let localAddress = connection.pendingConnect?.localAddress.map { strdup($0) }
        defer {
            free(address); free(path); free(localProtocol); free(alpn)
            if let offered { free(offered) }
            if let localAddress { free(localAddress) }
        }
        var info = lws_client_connect_info()
        info.context = context
        info.address = UnsafePointer(address)
        info.port = Int32(target.port)
        info.ssl_connection = flags
        info.path = UnsafePointer(path)
        info.host = UnsafePointer(address)
        info.protocol = offered.flatMap { $0 }.map { UnsafePointer($0) }
        info.local_protocol_name = UnsafePointer(localProtocol)
        info.alpn = UnsafePointer(alpn)
        info.iface = localAddress.flatMap { $0 }.map { UnsafePointer($0) }
        info.retry_and_idle_policy = UnsafePointer(retryPolicy)
        info.opaque_user_data = connection.retainedOpaquePointer()
        connection.pendingConnect?.startedAt = ContinuousClock.now
        let wsi = lws_client_connect_via_info(&info)
        if connection.isFinished { return }  // failed synchronously and already reported
        if let wsi {
            connection.attach(wsi)
        } else {
            let lines = TransportLog.takeCaptured()
            connection.pendingConnect?.failureReason = ConnectionFailure(lwsReason: lines.last ?? "", details: lines, target: target).explanation
            connection.finish()
        }
    }

    override func handleOther(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                              _ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
        if let handled = handleHTTP(wsi, reason, input, len) { return handled }
        switch reason {
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            guard let connection = WebSocketConnection.from(wsi), !connection.isFinished else { return -1 }
            connection.attach(wsi)
            connection.usesCompression = connection.usesCompression && Self.deflateIsActive(on: wsi)
            connection.markOpened()
            if phase != .running { lws_callback_on_writable(wsi) }  // shutdown: close at once
            if case .client(let delegate) = connection.owner {
                delegate.clientConnected(connection)
            }
            return connection.statusAfterUserCode()
        case LWS_CALLBACK_CLIENT_CONFIRM_EXTENSION_SUPPORTED:
            // 0 offers the extension (permessage-deflate, the only one configured) on this connection.
            return WebSocketConnection.from(wsi)?.usesCompression == true ? 0 : 1
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            if let pending = WebSocketConnection.from(wsi)?.pendingConnect, pending.failureReason == nil {
                var reason = ""
                if let input { reason = String(cString: input.assumingMemoryBound(to: CChar.self)) }
                let status = Int(lws_http_client_http_response(wsi))
                let target = try? WebSocketURL(parsing: pending.endpoint)
                pending.failureReason = ConnectionFailure(
                    lwsReason: reason, details: TransportLog.takeCaptured(), httpStatus: status, target: target
                ).explanation
            }
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, len)
        }
    }

    override var shutdownClose: (code: UInt16, reason: String) { (1000, "client shutdown") }
}

/// Why a client connection failed, in plain words with what to try: lws reports failures as terse
/// internal strings ("connect SSL err 1", "read failed", "HS: ws upgrade response not 101"), and
/// the same few mistakes (wss:// to a plain server, ws:// to a TLS one, a misspelt host, a server
/// that is not there) deserve an answer a user can act on.
public struct ConnectionFailure {
    /// lws' reason for the failure (may be empty).
    var lwsReason: String
    /// lws error lines logged while connecting (certificate verification details...).
    var details: [String] = []
    /// The HTTP status the server answered the upgrade with, when it answered one (0 otherwise).
    var httpStatus = 0
    var target: WebSocketURL?

    private var address: String {
        guard let target else { return "the server" }
        let host = target.host.contains(":") ? "[\(target.host)]" : target.host
        return "\(host):\(target.port)"
    }

    private func url(secure: Bool) -> String {
        guard var target else { return secure ? "wss://HOST:PORT" : "ws://HOST:PORT" }
        target.secure = secure
        return target.description
    }

    var explanation: String {
        let lower = lwsReason.lowercased()
        let tlsDetail = details.last { line in
            let l = line.lowercased()
            return l.contains("ssl") || l.contains("tls") || l.contains("certificate") || l.contains("verify")
        }
        let secure = target?.secure ?? false
        if let host = target?.host, let problem = Self.resolutionProblem(host) {
            return "cannot resolve the host name \"\(host)\" (\(problem)); check the host in the URL"
        }
        if httpStatus > 0 && httpStatus != 101 {
            return "\(address) answered HTTP \(httpStatus) instead of accepting the WebSocket connection: "
                + "it is not a Tether server, or it does not speak the client's protocol (tether.v1); check the URL and the server's version"
        }
        if lower.contains("ssl") || lower.contains("tls") || tlsDetail != nil {
            let text = (tlsDetail ?? lwsReason).lowercased()
            let untrusted = ["certificate", "verify", "self-signed", "self signed", "issuer", "expired", "hostname", "host name"]
            if untrusted.contains(where: text.contains) {
                let why = tlsDetail.map { Self.shortTLSDetail($0) } ?? lwsReason
                return "the TLS certificate of \(address) is not trusted (\(why)); "
                    + "pass its CA certificate with --ca FILE, or --insecure for a test server"
            }
            return "the TLS handshake with \(address) failed: the server probably does not use TLS "
                + "(a plain ws:// server); try \(url(secure: false))"
        }
        if lower.contains("unable to connect") || lower.contains("connect failed") || lower.contains("refused") {
            return Self.nothingAnswers + " \(address) (connection refused or host unreachable); "
                + "check that the server is running and the host and port in the URL"
        }
        if lower.contains("timed out") || lower.contains("timeout") {
            return "\(address) did not answer in time; check the host and port, and any firewall between"
        }
        if lower.contains("read failed") || lower.contains("closed") {
            // A daemon stopping or killed with the connection accepted does this too; the bytes
            // don't tell it from a TLS server reached with ws://, so both are said.
            if secure {
                return "\(address) \(Self.closedDuringHandshake) handshake (a server stopping or restarting does that); "
                    + "otherwise check that it is a Tether server"
            }
            return "\(address) \(Self.closedDuringHandshake) WebSocket handshake: a server stopping or restarting does that, "
                + "and so does a TLS server (then try \(url(secure: true))); otherwise check that it is a Tether server"
        }
        if lower.hasPrefix("hs:") || lower.contains("upgrade") || lower.contains("handshake") {
            return "\(address) refused the WebSocket handshake (\(lwsReason)); check that it is a Tether server"
        }
        return lwsReason.isEmpty ? "the connection to \(address) failed" : lwsReason
    }

    static let nothingAnswers = "nothing answers at"
    static let closedDuringHandshake = "closed the connection during the"

    /// Whether a failed connection's reason (an `explanation`, maybe after "cannot connect to
    /// URL: ") may heal by waiting: nothing listens yet, or the connection was closed before the
    /// handshake's answer (a server starting, stopping or restarting). A host that does not
    /// resolve, a failed TLS handshake or an HTTP answer will not.
    public static func mayHealByWaiting(_ reason: String) -> Bool {
        reason.contains(nothingAnswers) || reason.contains(closedDuringHandshake)
    }

    /// "SSL error: self-signed certificate (preverify_ok=0;err=18;depth=0)" as "self-signed certificate".
    static func shortTLSDetail(_ line: String) -> String {
        var text = Substring(line)
        if let colon = text.firstRange(of: "SSL error: ") { text = text[colon.upperBound...] }
        if let paren = text.firstIndex(of: "(") { text = text[..<paren] }
        while text.last == " " { text.removeLast() }
        return String(text)
    }

    /// Why `host` does not resolve, or nil when it does (or is an address literal).
    static func resolutionProblem(_ host: String) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &result)
        if let result { freeaddrinfo(result) }
        guard status != 0 else { return nil }
        // Only answers about the name mean a bad name; a resolver that is down is another matter.
        guard status == EAI_NONAME || status == -5 /* EAI_NODATA */ || status == EAI_FAIL else { return nil }
        return String(cString: gai_strerror(status))
    }
}

/// A parsed ws:// or wss:// URL.
struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    var secure: Bool
    var host: String
    var port: Int
    var path: String

    init(secure: Bool, host: String, port: Int, path: String) {
        self.secure = secure
        self.host = host
        self.port = port
        self.path = path
    }

    var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(secure ? "wss" : "ws")://\(shownHost):\(port)\(path)"
    }

    init(parsing url: String) throws {
        func fail(_ why: String) -> TransportError {
            .invalidURL("'\(url)': \(why) (expected ws://host[:port][/path] or wss://host[:port][/path])")
        }
        guard !url.isEmpty else { throw fail("empty") }
        guard url.unicodeScalars.allSatisfy({ $0.value > 32 && $0.value < 127 }) else {
            throw fail("contains spaces, control or non-ASCII characters")
        }
        guard let separator = url.firstRange(of: "://") else { throw fail("no scheme") }
        switch url[..<separator.lowerBound].lowercased() {
        case "ws": secure = false
        case "wss": secure = true
        case let other: throw fail("unsupported scheme '\(other)'")
        }
        var rest = url[separator.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var pathPart = String(rest[authorityEnd...])
        if pathPart.isEmpty { pathPart = "/" } else if pathPart.hasPrefix("?") { pathPart = "/" + pathPart }
        path = pathPart
        guard !authority.contains("@") else { throw fail("user information is not supported") }

        var hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw fail("unterminated IPv6 address") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("garbage after IPv6 address") }
                portPart = after.dropFirst()
            }
        } else {
            let pieces = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard pieces.count <= 2 else { throw fail("too many ':' in host") }
            hostPart = pieces[0]
            if pieces.count == 2 { portPart = pieces[1] }
        }
        guard !hostPart.isEmpty else { throw fail("no host") }
        let allowed = hostPart.unicodeScalars.allSatisfy { scalar in
            (scalar.value >= 48 && scalar.value <= 57) || (scalar.value >= 65 && scalar.value <= 90)
                || (scalar.value >= 97 && scalar.value <= 122) || ".-_:%".unicodeScalars.contains(scalar)
        }
        guard allowed else { throw fail("invalid host '\(hostPart)'") }
        host = String(hostPart)
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy(\.isASCII),
                  let value = Int(portPart), (1...65_535).contains(value) else {
                throw fail("invalid port '\(portPart)'")
            }
            port = value
        } else {
            port = secure ? 443 : 80
        }
    }
}
