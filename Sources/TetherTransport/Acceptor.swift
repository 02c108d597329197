import CLibWebSockets
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one listening socket of a server with several socket shards: a thread of its own blocks
/// in accept() and hands each new connection to a shard, which adopts it on its own service
/// thread. (Debian's libwebsockets has no service threads of its own, and its listen sharing does
/// not let several contexts listen on one port on Linux.)
final class Acceptor: @unchecked Sendable {
    private let fd: Int32
    let port: Int
    private let logger: Logger
    private let stopping = Atomic(false)
    private let thread = Mutex<pthread_t?>(nil)

    /// Binds and listens on `host:port` as the single-context server would (`listenInterface`
    /// says which interface and family); throws `cannotListen` or `addressInUse`.
    init(host: String, port: Int, logger: Logger) throws(TransportError) {
        self.logger = logger
        let display = "\(host):\(port)"
        let (interface, ipv4Only) = listenInterface(host)
        var address = sockaddr_storage()
        var length: socklen_t
        if let interface, let resolved = Self.socketAddress(interface, port: port) {
            (address, length) = resolved
        } else if let interface {
            guard let named = Self.interfaceAddress(interface, port: port) else {
                throw .cannotListen("\(display): no such address or interface")
            }
            (address, length) = named
        } else {
            (address, length) = Self.anyAddress(ipv6: !ipv4Only, port: port)
        }
        let family = Int32(address.ss_family)
        let socketFD = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketFD >= 0 else { throw .cannotListen("\(display): \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            var v6only: Int32 = 0  // "::" serves IPv4 too, as lws's listener does
            setsockopt(socketFD, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6only, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) }
        }
        guard bound == 0, listen(socketFD, 4096) == 0 else {
            let error = errno
            close(socketFD)
            if error == EADDRINUSE { throw .addressInUse(display) }
            throw .cannotListen("\(display): \(String(cString: strerror(error)))")
        }
        fd = socketFD
        var boundAddress = sockaddr_storage()
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &boundAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &boundLength) }
        }
        self.port = Self.port(of: boundAddress)
    }

    deinit {
        close(fd)
    }

    /// Starts the accepting thread: each accepted socket goes to `handOff`, which owns it from
    /// then on (adopts it, or closes it).
    func start(handOff: @escaping @Sendable (Int32) -> Void) throws(TransportError) {
        let listening = fd
        var tid = pthread_t()
        let body = ThreadBody { [self] in
            tether_set_thread_name("tether-accept")
            while !stopping.load(ordering: .relaxed) {
                let client = accept(listening, nil, nil)
                if client >= 0 {
                    _ = fcntl(client, F_SETFD, FD_CLOEXEC)  // lws makes it non-blocking
                    handOff(client)
                    continue
                }
                switch errno {
                case EINTR, ECONNABORTED, EAGAIN:
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors: wait instead of spinning; the backlog keeps the rest.
                    logger.warning("cannot accept a connection: \(String(cString: strerror(errno)))")
                    var pause = timespec(tv_sec: 0, tv_nsec: 50_000_000)
                    nanosleep(&pause, nil)
                default:
                    if !stopping.load(ordering: .relaxed) {
                        logger.error("accept() failed: \(String(cString: strerror(errno))); no new connections")
                    }
                    return
                }
            }
        }
        let box = Unmanaged.passRetained(body).toOpaque()
        let rc = pthread_create(&tid, nil, threadEntry, box)
        guard rc == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw .startFailed("cannot create the accepting thread (error \(rc))")
        }
        thread.withLock { $0 = tid }
    }

    /// Stops accepting (connections not accepted yet are refused) and waits for the thread.
    func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        // Wakes the blocked accept() (Linux answers EINVAL); the socket stays open until deinit.
        shutdown(fd, Int32(SHUT_RDWR))
        if let tid = thread.withLock({ state -> pthread_t? in defer { state = nil }; return state }) {
            pthread_join(tid, nil)
        }
    }

    // MARK: Addresses

    /// The socket address of a numeric IPv4 or IPv6 `host` (the system's parser: `getaddrinfo`).
    private static func socketAddress(_ host: String, port: Int) -> (sockaddr_storage, socklen_t)? {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(first) }
        guard let address = first.pointee.ai_addr else { return nil }
        var storage = sockaddr_storage()
        let length = first.pointee.ai_addrlen
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
        return (storage, length)
    }

    private static func anyAddress(ipv6: Bool, port: Int) -> (sockaddr_storage, socklen_t) {
        socketAddress(ipv6 ? "::" : "0.0.0.0", port: port)!
    }

    /// The first address of a network interface ("lo", "eth0"), IPv4 first.
    private static func interfaceAddress(_ name: String, port: Int) -> (sockaddr_storage, socklen_t)? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(first) }
        for family in [AF_INET, AF_INET6] {
            var cursor: UnsafeMutablePointer<ifaddrs>? = first
            while let entry = cursor {
                cursor = entry.pointee.ifa_next
                guard String(cString: entry.pointee.ifa_name) == name, let address = entry.pointee.ifa_addr,
                      Int32(address.pointee.sa_family) == family else { continue }
                let size = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
                var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                guard getnameinfo(address, size, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
                let numeric = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }.split(separator: "%").first.map(String.init) ?? ""
                if let resolved = socketAddress(numeric, port: port) { return resolved }
            }
        }
        return nil
    }

    private static func port(of address: sockaddr_storage) -> Int {
        var copy = address
        return withUnsafePointer(to: &copy) { pointer -> Int in
            if Int32(address.ss_family) == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }
}
