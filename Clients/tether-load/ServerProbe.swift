import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One reading of the server's process figures.
struct ServerSample: Sendable {
    /// When it was read (monotonic ns).
    var at = monotonicNanos()
    var cpuSeconds: Double?
    var residentBytes: Int?
    var peakResidentBytes: Int?
    /// Counters from /metrics (name with labels -> value), when it answered.
    var metrics: [String: Double] = [:]
}

/// Reads the server's CPU and memory: from /proc/<pid> when the server runs on this machine
/// (pid given, or found as the process listening on the URL's port), else from its /metrics.
/// /metrics is also read for the server's own counters.
struct ServerProbe: Sendable {
    let url: String
    let host: String
    let port: Int
    let pid: Int32?
    /// Plain HTTP only: /metrics is not read over TLS.
    let httpAllowed: Bool

    var source: String { pid != nil ? "proc" : (httpAllowed ? "metrics" : "none") }

    init(url: String, pid: Int32?) {
        self.url = url
        var rest = Substring(url)
        var secure = false
        if let range = url.range(of: "://") {
            secure = url[..<range.lowerBound].lowercased() == "wss"
            rest = url[range.upperBound...]
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var host = String(authority)
        var port = secure ? 443 : 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":"), let p = Int(after.dropFirst()) { port = p }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            if let p = Int(authority[authority.index(after: colon)...]) { port = p }
        }
        self.host = host
        self.port = port
        self.httpAllowed = !secure
        let local = ["127.0.0.1", "localhost", "::1", "0.0.0.0"].contains(host.lowercased()) || host.hasPrefix("127.")
        self.pid = pid ?? (local ? Self.findListener(port: port) : nil)
    }

    /// CPU, RSS and peak RSS now; `withMetrics` also scrapes /metrics (a round trip to the server).
    func sample(withMetrics: Bool) -> ServerSample {
        var sample = ServerSample()
        if withMetrics || pid == nil, httpAllowed, let text = try? httpGET("/metrics") {
            sample.metrics = Self.parseMetrics(text)
        }
        if let pid, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
           let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // fields[0] is the state (field 3 of proc(5)); utime and stime are fields 14 and 15.
            if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
                sample.cpuSeconds = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
            }
            if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) {
                sample.residentBytes = Self.statusKilobytes(status, "VmRSS:").map { $0 * 1024 }
                sample.peakResidentBytes = Self.statusKilobytes(status, "VmHWM:").map { $0 * 1024 }
            }
        } else {
            sample.cpuSeconds = sample.metrics["process_cpu_seconds_total"]
            sample.residentBytes = sample.metrics["process_resident_memory_bytes"].map { Int($0) }
            sample.peakResidentBytes = sample.metrics["process_peak_resident_memory_bytes"].map { Int($0) }
        }
        return sample
    }

    static func statusKilobytes(_ status: String, _ key: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix(key) {
            return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }

    /// `name{labels} value` lines; comments skipped.
    static func parseMetrics(_ text: String) -> [String: Double] {
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            values[String(line[..<space])] = value
        }
        return values
    }

    /// Plain HTTP/1.1 GET with a 2 s timeout.
    func httpGET(_ path: String) throws -> String {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { throw ProbeError.unreachable }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { throw ProbeError.unreachable }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { throw ProbeError.unreachable }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else { throw ProbeError.unreachable }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: response, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200") || text.hasPrefix("HTTP/1.0 200"),
              let bodyStart = text.range(of: "\r\n\r\n") else { throw ProbeError.badResponse }
        return String(text[bodyStart.upperBound...])
    }

    enum ProbeError: Error { case unreachable, badResponse }

    /// The pid of the process with a listening TCP socket on `port` (IPv4 or IPv6), found through
    /// /proc/net/tcp* (socket inode) and /proc/<pid>/fd (who holds it). Nil if not found or not
    /// allowed to look.
    static func findListener(port: Int) -> Int32? {
        var inodes: Set<String> = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                guard columns.count > 9, columns[3] == "0A",  // LISTEN
                      let portHex = columns[1].split(separator: ":").last, Int(portHex, radix: 16) == port else { continue }
                inodes.insert(String(columns[9]))
            }
        }
        guard !inodes.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        let own = getpid()
        for entry in entries {
            guard let pid = Int32(entry), pid != own,
                  let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(entry)/fd") else { continue }
            for fd in fds {
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/fd/\(fd)"),
                      target.hasPrefix("socket:[") else { continue }
                if inodes.contains(String(target.dropFirst(8).dropLast())) { return pid }
            }
        }
        return nil
    }
}
