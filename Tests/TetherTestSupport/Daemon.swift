import Foundation
import Synchronization

/// A real `tetherd` process for end-to-end tests: started on 127.0.0.1 with a free port, and
/// always stopped (SIGTERM, then SIGKILL) when the test is done with it.
public final class Daemon: @unchecked Sendable {
    public let process: Process
    public let port: Int
    public var url: String { "ws://127.0.0.1:\(port)" }
    private let stderrPipe: Pipe
    private let lock = NSLock()
    private var stderrText = ""

    /// The directory holding the package's built products (next to the test bundle).
    public static var productsDirectory: URL {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("tetherd").path) { return directory }
            directory = directory.deletingLastPathComponent()
        }
        return executable.deletingLastPathComponent()
    }

    public static func executable(_ name: String) -> URL {
        productsDirectory.appendingPathComponent(name)
    }

    /// The data directory the daemon keeps its rooms in (a fresh temporary one by default).
    public let dataDirectory: String

    /// Starts `tetherd --port PORT --data DIR ARGUMENTS` and waits for its "listening" line.
    /// `port` 0 lets the daemon pick; pass a daemon's `port` and `dataDirectory` to restart it in
    /// place. `TETHERD` in the environment names another binary (e.g. an AddressSanitizer build).
    /// `logLevel` nil leaves the level to the config file; `environment` adds variables.
    public init(arguments: [String] = [], port: Int = 0, dataDirectory: String? = nil, logLevel: String? = "warning",
                environment: [String: String] = [:], timeout: Duration = .seconds(20)) throws {
        self.dataDirectory = dataDirectory ?? Self.temporaryDirectory()
        let process = Process()
        process.executableURL = ProcessInfo.processInfo.environment["TETHERD"].map(URL.init(fileURLWithPath:)) ?? Self.executable("tetherd")
        process.arguments = ["--port", "\(port)"] + (logLevel.map { ["--log-level", $0] } ?? []) + ["--data", self.dataDirectory] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let stdoutPipe = Pipe()
        stderrPipe = Pipe()
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        try process.run()
        self.process = process

        let deadline = ContinuousClock.now + timeout
        var output = Data()
        var found: Int?
        let handle = stdoutPipe.fileHandleForReading
        while found == nil, ContinuousClock.now < deadline, process.isRunning {
            let chunk = handle.availableData
            if chunk.isEmpty { Thread.sleep(forTimeInterval: 0.02); continue }
            output.append(chunk)
            let text = String(decoding: output, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.contains("listening on") }),
               let portText = line.split(separator: ":").last, let port = Int(portText) {
                found = port
            }
        }
        guard let port = found else {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let errors = String(decoding: stderrPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw DaemonError.didNotStart(stdout: String(decoding: output, as: UTF8.self), stderr: errors)
        }
        self.port = port
        stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            guard let self else { return }
            self.lock.withLock { self.stderrText += text }
        }
    }

    /// Runs `tetherd ARGUMENTS` expecting it to exit by itself (a start-up failure, a
    /// subcommand); kills it after `timeout`. Returns its status and output.
    public static func runToExit(_ arguments: [String], timeout: Duration = .seconds(20)) throws -> (status: Int32, stdout: String, stderr: String) {
        try runProgram(ProcessInfo.processInfo.environment["TETHERD"].map(URL.init(fileURLWithPath:)) ?? executable("tetherd"),
                       arguments, timeout: timeout)
    }

    public static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "tether-test-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var stderr: String { lock.withLock { stderrText } }

    /// SIGTERM, then waits up to `timeout` for a graceful exit; SIGKILL after. Returns the exit
    /// status (nil if it had to be killed).
    @discardableResult
    public func stop(timeout: Duration = .seconds(10)) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL: a crash, for recovery tests.
    public func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGSTOP, then waits until every thread of the daemon has stopped (state `T` in /proc): the
    /// signal is handled by each thread in turn, and a thread still running could take one more
    /// message. Throws when it does not stop within 5 s.
    public func pause() throws {
        kill(process.processIdentifier, SIGSTOP)
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if processState == "T" { return }
            Thread.sleep(forTimeInterval: 0.005)
        }
        throw DaemonError.didNotStart(stdout: "", stderr: "tetherd \(pid) did not stop after SIGSTOP (state \(processState ?? "gone"))")
    }

    /// SIGCONT after `pause`.
    public func resume() {
        kill(process.processIdentifier, SIGCONT)
    }

    /// The process's state letter in /proc/PID/stat (`R`, `S`, `T` stopped…), nil when gone.
    public var processState: String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
    }

    /// Resident memory in bytes, from /proc.
    public func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return (line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) * 1024
        }
        return 0
    }

    /// `GET path` on the daemon's port.
    public func httpGET(_ path: String) throws -> (status: Int, body: String) {
        try HTTP.get(port: port, path: path)
    }

    deinit {
        stderrPipe.fileHandleForReading.readabilityHandler = nil
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

public enum DaemonError: Error, CustomStringConvertible {
    case didNotStart(stdout: String, stderr: String)

    public var description: String {
        switch self {
        case .didNotStart(let out, let err): return "tetherd did not start.\nstdout: \(out)\nstderr: \(err)"
        }
    }
}

/// Runs a program to its end (killed after `timeout`), reading both pipes as it goes.
public func runProgram(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                       timeout: Duration = .seconds(20)) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let (stdout, stderr) = (Pipe(), Pipe())
    process.standardOutput = stdout
    process.standardError = stderr
    let out = Mutex(Data()), err = Mutex(Data())
    stdout.fileHandleForReading.readabilityHandler = { handle in
        let chunk = handle.availableData
        out.withLock { $0.append(chunk) }
    }
    stderr.fileHandleForReading.readabilityHandler = { handle in
        let chunk = handle.availableData
        err.withLock { $0.append(chunk) }
    }
    try process.run()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    stdout.fileHandleForReading.readabilityHandler = nil
    stderr.fileHandleForReading.readabilityHandler = nil
    let restOut = stdout.fileHandleForReading.readDataToEndOfFile()
    let restErr = stderr.fileHandleForReading.readDataToEndOfFile()
    return (process.terminationStatus, String(decoding: out.withLock { $0 } + restOut, as: UTF8.self),
            String(decoding: err.withLock { $0 } + restErr, as: UTF8.self))
}

/// Plain HTTP/1.1 GET over a raw socket (no proxy, no client library).
public enum HTTP {
    public static func get(port: Int, path: String) throws -> (status: Int, body: String) {
        let socket = try RawSocket(port: port)
        try socket.write(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        let response = String(decoding: try socket.readAll(timeout: .seconds(5)), as: UTF8.self)
        let status = response.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let body = response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (status, body)
    }

    /// One response: its status, headers (names lower-cased) and body.
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Sends `request` (a whole HTTP/1.1 request, CRLFs included) and reads one response: the
    /// headers, then `content-length` bytes of body (none for 101). The connection may stay open.
    public static func exchange(port: Int, _ request: String) throws -> Answer {
        let socket = try RawSocket(port: port)
        try socket.write(Array(request.utf8))
        let terminator = Array("\r\n\r\n".utf8)
        var buffer: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(5)
        while buffer.firstRange(of: terminator) == nil {
            let chunk = try socket.read(timeout: deadline - .now)
            if chunk.isEmpty { break }
            buffer += chunk
        }
        guard let end = buffer.firstRange(of: terminator) else { throw RawSocketError.handshakeRefused(String(decoding: buffer, as: UTF8.self)) }
        let lines = String(decoding: buffer[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        var answer = Answer(status: lines.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0, headers: [:], body: Array(buffer[end.upperBound...]))
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            answer.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = answer.status == 101 ? 0 : Int(answer.headers["content-length"] ?? "0") ?? 0
        while answer.body.count < length {
            let chunk = try socket.read(timeout: deadline - .now)
            if chunk.isEmpty { break }
            answer.body += chunk
        }
        return answer
    }

    /// A WebSocket upgrade request for `/` as a browser would send it (Origin, subprotocol).
    public static func upgradeRequest(host: String, origin: String? = nil, subprotocol: String? = "tether.v1") -> String {
        var request = "GET / HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let origin { request += "Origin: \(origin)\r\n" }
        if let subprotocol { request += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        return request + "\r\n"
    }
}

/// A TCP port that was free a moment ago (for restarting a daemon in place on a known port).
public func freePort() throws -> Int {
    try freePorts(1)[0]
}

/// `count` distinct TCP ports that were free a moment ago. Every socket stays bound until all are
/// picked: closed one by one, the kernel may hand the same port out twice (a NATS cluster then
/// has a duplicate route and a server that cannot listen).
public func freePorts(_ count: Int) throws -> [Int] {
    var sockets: [Int32] = []
    defer { sockets.forEach { close($0) } }
    var ports: [Int] = []
    for _ in 0..<count {
        let (fd, port) = try bindLoopbackPort()
        sockets.append(fd)
        ports.append(port)
    }
    return ports
}

/// A loopback port nobody listens on, kept bound (not listening) while this lives: a connection
/// to it is refused, and no other test's server can take the port meanwhile (a port that was
/// merely free a moment ago can be, by a test running beside, within a client's retries).
public final class RefusingPort: @unchecked Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try bindLoopbackPort()
    }

    deinit { close(fd) }

    public var url: String { "ws://127.0.0.1:\(port)" }
}

/// A TCP socket bound to 127.0.0.1 on a port the kernel picks.
private func bindLoopbackPort() throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawSocketError.system("socket", errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else {
        close(fd)
        throw RawSocketError.system("bind", errno)
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
