import Foundation
import Synchronization
import Testing
@testable import TetherTransport
import TetherTestSupport

#if canImport(Glibc)
import Glibc
#endif

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

    func httpRequest(_ request: HTTPRequest, responder: HTTPResponder) {
        note()
        switch (request.method, request.path) {
        case ("GET", "/healthz"): responder.respond(HTTPResponse(status: 200, text: "ok"))
        case ("GET", "/metrics"):
            let count = state.withLock { $0.opened.count - $0.closed.count }
            responder.respond(HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4",
                                           text: "# TYPE tether_connections gauge\ntether_connections \(count)\n"))
        case ("POST", "/echo"): responder.respond(HTTPResponse(status: 200, body: request.body))
        case ("GET", "/request"):
            let headers = request.headers.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
            responder.respond(HTTPResponse(status: 200, text: "query \(request.query ?? "-") headers \(headers)"))
        case ("GET", "/big"): responder.respond(HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: 300_000)))
        case ("GET", "/later"):
            // Answered from another thread a moment later, as a request that waits for the network.
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) {
                responder.respond(HTTPResponse(status: 200, text: "later"))
                responder.respond(HTTPResponse(status: 500, text: "a second answer is ignored"))
            }
        case (let method, let path):
            responder.respond(HTTPResponse(status: 200, text: "\(method) \(path) \(request.authorization ?? "-")"))
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
            throw OpenSSLFailed(status: process.terminationStatus)
        }
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

struct OpenSSLFailed: Error {
    let status: Int32
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
        guard rc == 0 else { throw RawSocketError.system("listen", errno) }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { Glibc.close(fd) }
}
