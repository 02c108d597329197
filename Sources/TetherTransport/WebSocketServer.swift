import CLibWebSockets
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A WebSocket (ws:// or wss://) server that also answers plain HTTP GETs and DELETEs on the
/// same port.
///
/// Threading: `configuration.ioThreads` socket shards, each one lws context serviced by one
/// dedicated thread that owns the shard's sockets; every delegate callback of a shard runs on its
/// thread, and each shard has a delegate of its own. With one shard its context listens itself;
/// with several, an `Acceptor` listens and hands each new socket to the next shard in turn. Other
/// threads only call `execute` and `shutdown`. (Full rule at the top of ServiceLoop.swift.)
public final class WebSocketServer: Sendable {
    public let configuration: WebSocketServerConfiguration
    private let loops: [ServerLoop]
    private let acceptor = Mutex<Acceptor?>(nil)
    /// The shard the next accepted socket goes to (modulo the count).
    private let nextShard = AtomicCount()

    public init(configuration: WebSocketServerConfiguration = .init(),
                logger: Logger = Logger(label: "tether.transport.server")) {
        self.configuration = configuration
        let count = max(1, configuration.ioThreads)
        let shared = AtomicCount()
        self.loops = (0..<count).map { ServerLoop(configuration: configuration, logger: logger, shard: $0, shardCount: count, open: shared) }
    }

    deinit {
        shutdown(deadline: .zero)
    }

    /// The number of socket shards (service threads).
    public var shardCount: Int { loops.count }

    /// Listens and starts the service thread of a one-shard server. Returns the bound port
    /// (useful with port 0). Throws `TransportError.cannotListen` (port in use, bad address...),
    /// `.tls` (unreadable or invalid certificate/key) or `.alreadyStarted`. A server is started
    /// at most once.
    @discardableResult
    public func start(delegate: any WebSocketServerDelegate) throws -> Int {
        guard loops.count == 1 else { throw TransportError.startFailed("a server with \(loops.count) socket shards needs a delegate for each") }
        return try start(delegates: [delegate])
    }

    /// Listens and starts every shard, `delegates[i]` serving shard i. Returns the bound port.
    @discardableResult
    public func start(delegates: [any WebSocketServerDelegate]) throws -> Int {
        guard delegates.count == loops.count else { throw TransportError.startFailed("\(delegates.count) delegates for \(loops.count) socket shards") }
        if loops.count == 1 { return try loops[0].start(delegate: delegates[0], listens: true) }
        let acceptor = try Acceptor(host: configuration.host, port: configuration.port, logger: loops[0].logger)
        var started: [ServerLoop] = []
        do {
            for (loop, delegate) in zip(loops, delegates) {
                _ = try loop.start(delegate: delegate, listens: false)
                started.append(loop)
            }
            let loops = self.loops
            let next = self.nextShard
            try acceptor.start { fd in
                // In turn: a storm spreads evenly, and no shard's state is read across threads.
                let shard = loops[next.value.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
                if !shard.execute({ shard.adopt(fd) }) { close(fd) }
            }
        } catch {
            for loop in started { loop.shutdown(deadline: .zero) }
            throw error
        }
        self.acceptor.withLock { $0 = acceptor }
        return acceptor.port
    }

    /// Runs `work` on the first shard's service thread, after everything given to it before
    /// (FIFO; many share one wake-up). Returns false, dropping `work`, when the server is not
    /// running.
    @discardableResult
    public func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        loops[0].execute(work)
    }

    /// `execute` on shard `shard`'s service thread.
    @discardableResult
    public func execute(onShard shard: Int, _ work: @escaping @Sendable () -> Void) -> Bool {
        loops[shard].execute(work)
    }

    /// Each shard's open connections and the CPU time its thread used so far (updated about
    /// once a second), in shard order. Any thread.
    public var shardStatistics: [ShardStatistics] {
        loops.map { ShardStatistics(connections: $0.openConnections,
                                    cpuSeconds: Double($0.cpuNanoseconds.load(ordering: .relaxed)) / 1e9) }
    }

    /// Graceful stop, blocking until every service thread is gone: new connections are refused,
    /// `willShutdown()` lets the layer above queue final messages, connections get
    /// `connectionWritable` until they have nothing left (for up to half the deadline), then every
    /// WebSocket is closed with 1001; the context is destroyed when all are gone or at the
    /// deadline (remaining connections are dropped; `connectionClosed` is still called for each).
    /// Called from a delegate callback it only starts the shutdown. Shards stop side by side.
    public func shutdown(deadline: Duration = .seconds(5)) {
        acceptor.withLock { $0 }?.stop()
        for loop in loops { loop.beginShutdown(deadline: deadline) }
        for loop in loops { loop.shutdown(deadline: deadline) }
    }

    /// Serves `tls` to connections whose handshake starts from now on; established connections
    /// keep the certificate they have. Runs on each shard's thread. Throws `.tls` (unreadable
    /// file, a key that does not belong to the certificate...) and then changes nothing, or
    /// `.notRunning`. Returns the new certificate's serial number (hex), for the log.
    public func reloadCertificate(_ tls: TLSFiles) async throws(TransportError) -> String {
        if let problem = tls.problem { throw .tls(problem) }
        var serial = ""
        for loop in loops {
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, TransportError>, Never>) in
                let queued = loop.execute { continuation.resume(returning: loop.installCertificate(tls)) }
                if !queued { continuation.resume(returning: .failure(.notRunning)) }
            }
            serial = try result.get()
        }
        return serial
    }

    /// `shutdown(deadline:)` for async code: waits without blocking a concurrency thread.
    public func shutdownAsync(deadline: Duration = .seconds(5)) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            detachThread { [self] in
                shutdown(deadline: deadline)
                continuation.resume()
            }
        }
    }
}

/// One socket shard's figures (`WebSocketServer.shardStatistics`).
public struct ShardStatistics: Sendable, Equatable {
    public var connections: Int
    /// CPU time its service thread has used since it started.
    public var cpuSeconds: Double
}

/// A counter shared between threads by reference (a server's open connections across shards).
final class AtomicCount: Sendable {
    let value = Atomic<Int>(0)
}

final class ServerLoop: ServiceLoop, @unchecked Sendable {
    let configuration: WebSocketServerConfiguration
    /// Set by start, cleared when the loop finishes; used on the loop thread only afterwards.
    var delegate: (any WebSocketServerDelegate)?
    /// The vhost's OpenSSL context (lws hands it over while creating a TLS vhost); certificates
    /// are swapped on it. Loop-thread confined once started.
    private var sslContext: OpaquePointer?
    /// Pings silent peers, drops dead ones (loop thread).
    private var keepalive: KeepaliveSweep
    /// HTTP requests not answered yet, by connection, with the request's number (a late answer
    /// must not reach a later request on a reused connection) and, once given, the answer.
    var pendingHTTP: [OpaquePointer: (id: Int, response: HTTPResponse?)] = [:]
    var httpRequestCount = 0
    /// The connection whose request the delegate is answering right now (loop thread).
    var answeringNow: OpaquePointer?
    /// Requests that came as HEAD: answered without their body.
    var headRequests: Set<OpaquePointer> = []
    /// Connections whose answer lws is still sending: closed once it is out.
    var closingHTTP: Set<OpaquePointer> = []
    /// Streamed answers (Server-Sent Events), by connection.
    var streams: [OpaquePointer: HTTPStream] = [:]
    /// POSTs whose body is being read, by connection.
    var pendingBodies: [OpaquePointer: (reader: HTTPBodyReader, request: HTTPRequest)] = [:]

    /// Open connections of every shard of this server, against `maxConnections`.
    private let serverOpen: AtomicCount
    /// This shard's thread's CPU time, for `shardStatistics`.
    let cpuNanoseconds = Atomic<UInt64>(0)
    /// Where adopted sockets are served (a shard that does not listen itself).
    private var adoptionVhost: OpaquePointer?

    init(configuration: WebSocketServerConfiguration, logger: Logger, shard: Int, shardCount: Int, open: AtomicCount) {
        self.configuration = configuration
        self.serverOpen = open
        self.keepalive = KeepaliveSweep(ping: configuration.pingInterval, idle: configuration.idleTimeout)
        super.init(logger: logger, threadName: shardCount == 1 ? "tether-ws-srv" : "tether-io-\(shard)", maxMessageBytes: configuration.maxMessageBytes,
                   validatesUTF8: configuration.validateUTF8)
        // Connection ids stay unique across the server's shards.
        connectionIDs.store(UInt64(shard) << 48 | 1, ordering: .relaxed)
    }

    /// `listens`: the context listens on the configured port itself (one shard), or serves only
    /// the sockets `adopt` hands it (returns 0 then).
    func start(delegate: any WebSocketServerDelegate, listens: Bool) throws -> Int {
        try claimStart()
        do {
            return try startContext(delegate: delegate, listens: listens)
        } catch {
            self.delegate = nil
            releaseStart()
            throw error
        }
    }

    private func startContext(delegate: any WebSocketServerDelegate, listens: Bool) throws -> Int {
        TransportLog.configureIfNeeded(logger: logger)
        let config = configuration
        let display = "\(config.host):\(config.port)"
        guard (0...65_535).contains(config.port) else {
            throw TransportError.cannotListen("\(display): port out of range")
        }
        guard !config.subprotocol.isEmpty, config.subprotocol.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != 44 }) else {
            throw TransportError.startFailed("invalid subprotocol name '\(config.subprotocol)'")
        }
        if let tls = config.tls {
            try checkReadable(tls.certificatePath, what: "certificate")
            try checkReadable(tls.privateKeyPath, what: "private key")
        }
        self.delegate = delegate

        let protocols = makeProtocols(name: config.subprotocol, wholeWrites: true)
        var options = TETHER_OPT_EXPLICIT_VHOSTS
        if config.tls != nil { options |= TETHER_OPT_DO_SSL_GLOBAL_INIT }
        let handshakeSeconds = UInt32(clamping: max(1, wholeSeconds(config.handshakeTimeout)))

        var info = baseContextInfo(fdLimit: max(1, config.maxConnections))
        info.options = options
        info.timeout_secs = handshakeSeconds
        info.timeout_secs_ah_idle = handshakeSeconds

        TransportLog.beginCapture()
        defer { TransportLog.endCapture() }
        guard let context = createContext(&info) else {
            destroyUnstartedContext(nil)
            throw TransportError.startFailed(explain(TransportLog.takeCaptured(), fallback: "lws_create_context failed"))
        }

        let (interface, ipv4Only) = listenInterface(config.host)
        var vhost = info
        vhost.port = listens ? Int32(config.port) : Int32(TETHER_PORT_NO_LISTEN_SERVER)
        vhost.iface = listens ? interface.map { keepCString($0) } : nil
        vhost.protocols = UnsafePointer(protocols)
        vhost.vhost_name = keepCString("tether")
        vhost.alpn = keepCString("http/1.1")
        vhost.keepalive_timeout = 5
        vhost.options = options | TETHER_OPT_FAIL_UPON_UNABLE_TO_BIND | (ipv4Only ? TETHER_OPT_DISABLE_IPV6 : 0)
        // Keepalive is the loop's own sweep (KeepaliveSweep says why): a policy without lws's
        // per-connection validity timer, which the vhost would otherwise take from the context.
        vhost.retry_and_idle_policy = UnsafePointer(makeRetryPolicy(ping: nil, idle: nil))
        if config.compression {
            vhost.extensions = makeDeflateExtension()
        }
        if let tls = config.tls {
            vhost.ssl_cert_filepath = keepCString(tls.certificatePath)
            vhost.ssl_private_key_filepath = keepCString(tls.privateKeyPath)
        }
        guard let createdVhost = lws_create_vhost(context, &vhost) else {
            let lines = TransportLog.takeCaptured()
            destroyUnstartedContext(context)
            if listens, let bindError = probeBind(host: interface, port: config.port, ipv4Only: ipv4Only) {
                if bindError == EADDRINUSE { throw TransportError.addressInUse(display) }
                throw TransportError.cannotListen("\(display): \(String(cString: strerror(bindError)))")
            }
            if config.tls != nil {
                throw TransportError.tls(explain(lines, fallback: "the certificate or private key was rejected"))
            }
            throw TransportError.cannotListen("\(display): \(explain(lines, fallback: "lws_create_vhost failed"))")
        }
        let boundPort = listens ? Int(lws_get_vhost_listen_port(createdVhost)) : 0
        adoptionVhost = createdVhost
        try startThread(context: context)
        logger.debug("WebSocket server listening on \(config.host):\(boundPort)\(config.tls == nil ? "" : " (TLS)")")
        return boundPort
    }

    // MARK: Callbacks

    override func inboxDidDrain() {
        delegate?.didRunQueuedWork()
    }

    private var acceptsNewConnections: Bool {
        phase == .running && serverOpen.value.load(ordering: .relaxed) < configuration.maxConnections && delegate != nil
    }

    /// On the loop thread: serves a socket the acceptor took (closing it when the shard no
    /// longer takes connections).
    func adopt(_ fd: Int32) {
        guard acceptsNewConnections, let adoptionVhost else {
            close(fd)
            return
        }
        if tether_adopt_socket(adoptionVhost, fd, configuration.tls == nil ? 0 : 1) == nil {
            logger.debug("libwebsockets refused an accepted connection")  // and closed it
        }
    }

    override func handleOther(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                              _ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION, LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            return acceptsNewConnections ? 0 : 1
        case LWS_CALLBACK_OPENSSL_LOAD_EXTRA_SERVER_VERIFY_CERTS:
            sslContext = user.map(OpaquePointer.init)
            return 0
        case LWS_CALLBACK_CONFIRM_EXTENSION_OKAY:
            return acceptsExtensionOffer(wsi, input)
        case LWS_CALLBACK_ESTABLISHED:
            return opened(wsi)
        case LWS_CALLBACK_HTTP:
            return serveHTTP(wsi, input, len)
        case LWS_CALLBACK_HTTP_WRITEABLE:
            if closingHTTP.contains(wsi) { return closeWhenSent(wsi) }
            if let stream = streams[wsi] { return writeStream(wsi, stream) }
            guard let pending = pendingHTTP[wsi], let response = pending.response else {
                return lws_callback_http_dummy(wsi, reason, user, input, len)
            }
            pendingHTTP[wsi] = nil
            return finishHTTP(wsi, response)
        case LWS_CALLBACK_HTTP_BODY:
            return bodyArrived(wsi, input, len)
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            return bodyCompleted(wsi)
        case LWS_CALLBACK_CLOSED_HTTP:
            streams.removeValue(forKey: wsi)?.ended()
            closingHTTP.remove(wsi)
            pendingHTTP[wsi] = nil
            pendingBodies[wsi] = nil
            headRequests.remove(wsi)
            return lws_callback_http_dummy(wsi, reason, user, input, len)
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            return confirmUpgrade(wsi)
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, len)
        }
    }

    private func opened(_ wsi: OpaquePointer) -> Int32 {
        guard acceptsNewConnections, let delegate else { return -1 }
        let offered = lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL) > 0
        let connection = WebSocketConnection(
            id: connectionIDs.wrappingAdd(1, ordering: .relaxed).oldValue,
            remoteAddress: peerAddress(wsi),
            subprotocol: offered ? configuration.subprotocol : nil,
            loop: self,
            owner: .server(delegate))
        connection.attach(wsi)
        connection.usesCompression = configuration.compression && Self.deflateIsActive(on: wsi)
        connection.markOpened()
        serverOpen.value.add(1, ordering: .relaxed)
        keepalive.add(connection)
        delegate.connectionOpened(connection)
        return 0
    }

    /// A client offers an extension (only permessage-deflate is configured, when compression is
    /// on): accept unless the offer limits the window the server may compress with below the
    /// 32 KiB `MessageDeflater` uses (`server_max_window_bits` under 15). lws reads only the
    /// first offer and answers only its options without values, so that is all there is to check.
    private func acceptsExtensionOffer(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?) -> Int32 {
        guard let input, String(cString: input.assumingMemoryBound(to: CChar.self)) == Self.deflateExtensionName else { return 1 }
        let length = Int(lws_hdr_total_length(wsi, WSI_TOKEN_EXTENSIONS))
        guard length > 0 else { return 0 }
        var header = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &header, Int32(header.count), WSI_TOKEN_EXTENSIONS) >= 0 else { return 1 }
        let offer = String(decoding: header.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased().split(separator: ",").first ?? ""
        for parameter in offer.split(separator: ";") {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.filter { $0 != " " && $0 != "\t" && $0 != "\"" } }
            if pair.count == 2, pair[0] == "server_max_window_bits", Int(pair[1]) ?? 0 < 15 { return 1 }
        }
        return 0
    }

    /// Before lws accepts a WebSocket upgrade: a page of a foreign origin gets 403, a client
    /// offering only subprotocols we don't speak 400 naming ours (lws itself would drop it with
    /// no answer). A positive return tells lws the answer is written; it then completes the
    /// HTTP transaction.
    private func confirmUpgrade(_ wsi: OpaquePointer) -> Int32 {
        let check = UpgradeCheck(subprotocol: configuration.subprotocol, origins: configuration.allowedOrigins)
        let origin = header(wsi, WSI_TOKEN_ORIGIN)
        guard let refusal = check.refusal(origin: origin, host: header(wsi, WSI_TOKEN_HOST),
                                          offeredSubprotocols: header(wsi, WSI_TOKEN_PROTOCOL)) else { return 0 }
        logger.info("refused a WebSocket upgrade from \(peerAddress(wsi))\(origin.map { " (Origin \($0))" } ?? ""): HTTP \(refusal.status)")
        return writeUpgradeRefusal(wsi, refusal) ? 1 : -1
    }

    /// Writes a whole response as raw bytes. lws's header helpers can't be used this early: they
    /// take the status line's HTTP version from the request, which lws parses only after this
    /// callback, and would answer "HTTP/1.0", which WebSocket clients reject as invalid.
    private func writeUpgradeRefusal(_ wsi: OpaquePointer, _ response: HTTPResponse) -> Bool {
        let reasons = [400: "Bad Request", 403: "Forbidden"]
        var head = "HTTP/1.1 \(response.status) \(reasons[response.status] ?? "Refused")\r\n"
        head += "content-type: \(response.contentType)\r\ncontent-length: \(response.body.count)\r\n"
        for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + response.body
        let destination = scratchPayload(capacity: bytes.count)
        bytes.withUnsafeBytes { UnsafeMutableRawPointer(destination).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return lws_write(wsi, destination, bytes.count, LWS_WRITE_HTTP_FINAL) == bytes.count
    }

    override func shutdownWillBegin() -> Bool {
        delegate?.willShutdown()
        return true
    }

    override var shutdownClose: (code: UInt16, reason: String) { (1001, "server shutting down") }

    override func loopDidFinish() {
        delegate = nil
    }

    override func everySecond() {
        keepaliveTick += 1
        keepalive.sweep(tick: keepaliveTick)
        tickStreams()
        var used = timespec()
        if clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used) == 0 {
            cpuNanoseconds.store(UInt64(used.tv_sec) * 1_000_000_000 + UInt64(used.tv_nsec), ordering: .relaxed)
        }
    }

    override func connectionFinished(_ connection: WebSocketConnection) {
        keepalive.remove(connection)
        if connection.isOpened { serverOpen.value.subtract(1, ordering: .relaxed) }
    }

    /// On the loop thread: loads and installs the certificate and key on the vhost.
    func installCertificate(_ tls: TLSFiles) -> Result<String, TransportError> {
        guard let sslContext else { return .failure(.tls("this server was started without TLS; enabling it needs a restart")) }
        if let problem = tls.load(into: sslContext) { return .failure(.tls(problem)) }
        return .success(TLSFiles.serial(of: sslContext))
    }

    // MARK: Helpers

    private func checkReadable(_ path: String, what: String) throws {
        if access(path, R_OK) != 0 {
            throw TransportError.tls("cannot read \(what) file '\(path)': \(String(cString: strerror(errno)))")
        }
    }
}

extension TLSFiles {
    /// Why these files can't serve TLS (unreadable, not PEM, a key that does not belong to the
    /// certificate), or nil when they can. Changes nothing.
    public var problem: String? { load(into: nil) }

    /// Loads the pair, and installs it on `context` when one is given; the reason on failure.
    func load(into context: OpaquePointer?) -> String? {
        var error = [CChar](repeating: 0, count: 512)
        guard tether_tls_load(context, certificatePath, privateKeyPath, &error, error.count) != 0 else { return nil }
        return String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The serial number (hex) of the certificate `context` serves.
    static func serial(of context: OpaquePointer) -> String {
        var serial = [CChar](repeating: 0, count: 128)
        tether_tls_serial(context, &serial, serial.count)
        return String(decoding: serial.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Maps a host setting to lws' `iface` (nil = every interface) and whether IPv6 is off.
func listenInterface(_ host: String) -> (interface: String?, ipv4Only: Bool) {
    switch host {
    case "", "*", "0.0.0.0": return (nil, true)
    case "::", "[::]": return (nil, false)
    case "localhost": return ("127.0.0.1", true)
    default: break
    }
    var v4 = in_addr()
    if inet_pton(AF_INET, host, &v4) == 1 { return (host, true) }
    var bare = host
    if bare.hasPrefix("[") && bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, bare, &v6) == 1 { return (bare, false) }
    return (host, false)  // an interface name such as "lo" or "eth0"
}

/// After lws failed to listen, binds a throwaway socket the same way to get the OS's reason.
/// Returns the errno, or nil when the address can be bound (the failure was something else).
func probeBind(host: String?, port: Int, ipv4Only: Bool) -> Int32? {
    guard port != 0 else { return nil }
    var v4 = in_addr()
    let isV4 = host.map { inet_pton(AF_INET, $0, &v4) == 1 } ?? ipv4Only
    if !isV4, host != nil {
        var v6 = in6_addr()
        guard let host, inet_pton(AF_INET6, host, &v6) == 1 else { return nil }
    }
    let fd = socket(isV4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var result: Int32
    if isV4 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = host == nil ? in_addr(s_addr: 0) : v4
        result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    } else {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = in_port_t(UInt16(port).bigEndian)
        if let host { _ = inet_pton(AF_INET6, host, &address.sin6_addr) }
        result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    }
    return result == 0 ? nil : errno
}

/// The peer's IP address as text ("::ffff:" prefix of v4-mapped addresses removed).
func peerAddress(_ wsi: OpaquePointer) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    guard lws_get_peer_simple(wsi, &buffer, buffer.count) != nil else { return "unknown" }
    var text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    if text.hasPrefix("::ffff:") && text.contains(".") { text.removeFirst(7) }
    return text.isEmpty ? "unknown" : text
}

/// One line out of the lws error lines captured during an operation.
func explain(_ lines: [String], fallback: String) -> String {
    let useful = lines.suffix(3)
    return useful.isEmpty ? fallback : useful.joined(separator: "; ")
}
