import Foundation
import Synchronization
import Testing
@testable import TetherTransport

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Waiting

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Polls `condition` every 5 ms until it holds; throws after `timeout`.
func waitUntil(_ what: String, timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

final class Locked<Value>: @unchecked Sendable {
    private let mutex: Mutex<Void> = Mutex(())
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        mutex.withLock { _ in body(&value) }
    }
    var current: Value { withLock { $0 } }
}

/// The Linux thread id of the calling thread (from /proc/thread-self).
func linuxThreadID() -> Int? {
    var buffer = [CChar](repeating: 0, count: 256)
    let n = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return path.split(separator: "/").last.flatMap { Int($0) }
}

func threadExists(_ tid: Int) -> Bool {
    access("/proc/self/task/\(tid)", F_OK) == 0
}

// MARK: - Outgoing queue shared by the test delegates

/// Per-connection outgoing frames, written from `connectionWritable` while not choked (the
/// pattern the server layer uses).
final class Outbox {
    var frames: [(binary: Bool, bytes: [UInt8])] = []

    static func of(_ connection: WebSocketConnection) -> Outbox {
        if let box = connection.context as? Outbox { return box }
        let box = Outbox()
        connection.context = box
        return box
    }

    static func enqueue(_ connection: WebSocketConnection, _ bytes: [UInt8], binary: Bool = false) {
        of(connection).frames.append((binary, bytes))
        connection.requestWritable()
    }

    static func flush(_ connection: WebSocketConnection) {
        let box = of(connection)
        var sent = 0
        while sent < box.frames.count && !connection.isChoked {
            let frame = box.frames[sent]
            let ok = frame.bytes.withUnsafeBytes {
                frame.binary ? connection.sendBinary($0) : connection.sendText($0)
            }
            if !ok { break }
            sent += 1
        }
        box.frames.removeFirst(sent)
        if !box.frames.isEmpty { connection.requestWritable() }
    }
}

// MARK: - Echo server delegate

final class EchoServer: WebSocketServerDelegate, @unchecked Sendable {
    struct State {
        var opened: [UInt64] = []
        var closed: [UInt64] = []
        var closeCodes: [UInt64: UInt16] = [:]
        var subprotocols: [String?] = []
        var remoteAddresses: [String] = []
        var textCount = 0
        var binaries: [[UInt8]] = []
        var callbackThreads: Set<UInt> = []
        var loopTID: Int?
        var shutdownCalled = false
    }
    let state = Locked(State())
    /// Text sent to every open connection when shutdown starts (nil: nothing).
    var goodbye: String?
    private var open: [UInt64: WebSocketConnection] = [:]  // loop thread only

    private func note() {
        let key = currentThreadKey()
        let tid = linuxThreadID()
        state.withLock { state in
            state.callbackThreads.insert(key)
            if state.loopTID == nil { state.loopTID = tid }
        }
    }

    func connectionOpened(_ connection: WebSocketConnection) {
        note()
        open[connection.id] = connection
        state.withLock {
            $0.opened.append(connection.id)
            $0.subprotocols.append(connection.subprotocol)
            $0.remoteAddresses.append(connection.remoteAddress)
        }
    }

    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) {
        note()
        state.withLock { $0.textCount += 1 }
        let text = String(decoding: payload, as: UTF8.self)
        if text.hasPrefix("close:") {
            connection.close(code: UInt16(text.dropFirst(6)) ?? 1000, reason: "asked to")
            return
        }
        Outbox.enqueue(connection, Array(payload))
    }

    func connection(_ connection: WebSocketConnection, receivedBinary payload: UnsafeRawBufferPointer) {
        note()
        state.withLock { $0.binaries.append(Array(payload)) }
        Outbox.enqueue(connection, Array(payload), binary: true)
    }

    func connectionWritable(_ connection: WebSocketConnection) {
        note()
        Outbox.flush(connection)
    }

    func connectionClosed(_ connection: WebSocketConnection) {
        note()
        open[connection.id] = nil
        connection.context = nil
        state.withLock {
            $0.closed.append(connection.id)
            $0.closeCodes[connection.id] = connection.closeCode
        }
    }

    func httpGET(path: String) -> HTTPResponse {
        note()
        switch path {
        case "/healthz": return HTTPResponse(status: 200, text: "ok")
        case "/metrics":
            let count = state.withLock { $0.opened.count - $0.closed.count }
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4",
                                text: "# TYPE tether_connections gauge\ntether_connections \(count)\n")
        case "/big": return HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: 300_000))
        default: return .notFound
        }
    }

    func willShutdown() {
        note()
        state.withLock { $0.shutdownCalled = true }
        if let goodbye {
            for connection in open.values { Outbox.enqueue(connection, Array(goodbye.utf8)) }
        }
    }
}

// MARK: - Recording client delegate

final class RecordingClient: WebSocketClientDelegate, @unchecked Sendable {
    struct State {
        var connected = false
        var failure: String?
        var texts: [String] = []
        var binaries: [[UInt8]] = []
        var closed = false
        var closeCode: UInt16?
        var subprotocol: String?
        var callbackThreads: Set<UInt> = []
    }
    let state = Locked(State())
    private let connectionBox = Locked<WebSocketConnection?>(nil)
    /// The connection this recorder was last connected on.
    var lastConnection: WebSocketConnection? { connectionBox.current }
    /// Texts queued as soon as the connection opens.
    var initialMessages: [String] = []

    var connected: Bool { state.current.connected }
    var finished: Bool { state.withLock { $0.closed || $0.failure != nil } }

    private func note() {
        let key = currentThreadKey()
        state.withLock { _ = $0.callbackThreads.insert(key) }
    }

    func clientConnected(_ connection: WebSocketConnection) {
        note()
        connectionBox.withLock { $0 = connection }
        state.withLock {
            $0.connected = true
            $0.subprotocol = connection.subprotocol
        }
        for message in initialMessages { Outbox.enqueue(connection, Array(message.utf8)) }
    }

    func clientConnectFailed(_ connection: WebSocketConnection, reason: String) {
        note()
        state.withLock { $0.failure = reason }
    }

    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) {
        note()
        let text = String(decoding: payload, as: UTF8.self)
        state.withLock { $0.texts.append(text) }
    }

    func connection(_ connection: WebSocketConnection, receivedBinary payload: UnsafeRawBufferPointer) {
        note()
        state.withLock { $0.binaries.append(Array(payload)) }
    }

    func connectionWritable(_ connection: WebSocketConnection) {
        note()
        Outbox.flush(connection)
    }

    func connectionClosed(_ connection: WebSocketConnection, code: UInt16?) {
        note()
        connection.context = nil
        state.withLock {
            $0.closed = true
            $0.closeCode = code
        }
    }
}

// MARK: - Raw sockets

enum RawSocketError: Error { case connect(Int32), io(String) }

/// A blocking TCP socket to 127.0.0.1 with a 10 s receive timeout.
final class RawSocket {
    let fd: Int32
    private var pending: [UInt8] = []

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError.connect(errno) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if rc != 0 {
            let error = errno
            Glibc.close(fd)
            throw RawSocketError.connect(error)
        }
    }

    deinit { Glibc.close(fd) }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw RawSocketError.io("send failed: \(errno)") }
            offset += n
        }
    }

    func write(_ text: String) throws { try write(Array(text.utf8)) }

    /// Reads whatever arrives next (empty at EOF).
    func readSome() throws -> [UInt8] {
        if !pending.isEmpty {
            defer { pending = [] }
            return pending
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw RawSocketError.io("recv failed: \(errno)") }
        return Array(buffer[0..<n])
    }

    func readExactly(_ count: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        while result.count < count {
            let chunk = try readSome()
            if chunk.isEmpty { throw RawSocketError.io("EOF after \(result.count) of \(count) bytes") }
            result.append(contentsOf: chunk)
        }
        pending = Array(result[count...]) + pending
        return Array(result[..<count])
    }

    /// Reads up to and including "\r\n\r\n".
    func readHeaders() throws -> String {
        var result: [UInt8] = []
        while true {
            let chunk = try readSome()
            if chunk.isEmpty { break }
            result.append(contentsOf: chunk)
            if let end = findHeaderEnd(result) {
                pending = Array(result[end...]) + pending
                return String(decoding: result[..<end], as: UTF8.self)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    func readToEOF() throws -> [UInt8] {
        var result: [UInt8] = []
        while true {
            let chunk = try readSome()
            if chunk.isEmpty { return result }
            result.append(contentsOf: chunk)
        }
    }

    private func findHeaderEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    // MARK: HTTP

    /// Sends one GET and returns (status, body) (Content-Length framed).
    func httpGET(_ path: String) throws -> (status: Int, headers: String, body: [UInt8]) {
        try write("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: raw-test\r\n\r\n")
        let headers = try readHeaders()
        let statusLine = headers.split(separator: "\r\n").first ?? ""
        let status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
        var length = 0
        for line in headers.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
        }
        let body = try readExactly(length)
        return (status, headers, body)
    }

    // MARK: WebSocket (client side, masked frames)

    func webSocketHandshake(subprotocol: String? = "tether.v1") throws -> String {
        var request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let subprotocol { request += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        request += "\r\n"
        try write(request)
        return try readHeaders()
    }

    func sendFrame(opcode: UInt8, fin: Bool = true, payload: [UInt8]) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65_536 {
            frame.append(0x80 | 126)
            frame.append(UInt8(payload.count >> 8)); frame.append(UInt8(payload.count & 0xff))
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((payload.count >> shift) & 0xff)) }
        }
        frame.append(contentsOf: mask)
        for (i, byte) in payload.enumerated() { frame.append(byte ^ mask[i % 4]) }
        try write(frame)
    }

    /// Reads one server frame (unmasked). Returns nil at EOF.
    func readFrame() throws -> (opcode: UInt8, payload: [UInt8])? {
        let head: [UInt8]
        do { head = try readExactly(2) } catch RawSocketError.io(let message) where message.hasPrefix("EOF") { return nil }
        var length = Int(head[1] & 0x7f)
        if length == 126 {
            let ext = try readExactly(2)
            length = Int(ext[0]) << 8 | Int(ext[1])
        } else if length == 127 {
            let ext = try readExactly(8)
            length = ext.reduce(0) { $0 << 8 | Int($1) }
        }
        let payload = try readExactly(length)
        return (head[0] & 0x0f, payload)
    }

    /// Reads frames until a close frame; returns its code (nil at EOF without one).
    func readCloseCode() throws -> UInt16? {
        while let frame = try readFrame() {
            if frame.opcode == 8 {
                try? sendFrame(opcode: 8, payload: Array(frame.payload.prefix(2)))  // acknowledge
                return frame.payload.count >= 2 ? UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]) : 1005
            }
        }
        return nil
    }
}

// MARK: - Certificates

/// A throwaway self-signed certificate for localhost / 127.0.0.1 in a temp directory.
struct TestCertificate {
    let directory: URL
    var certificate: String { directory.appendingPathComponent("cert.pem").path }
    var key: String { directory.appendingPathComponent("key.pem").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tether-transport-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
            "-days", "30", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ]
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw RawSocketError.io("openssl req failed with status \(process.terminationStatus)")
        }
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A TCP listener on 127.0.0.1 that never accepts: connections complete at TCP level (kernel
/// backlog) but nobody ever answers.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0, listen(fd, 16) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard rc == 0 else { throw RawSocketError.connect(errno) }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { Glibc.close(fd) }
}
