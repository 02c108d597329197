import Foundation
import TetherJSON

/// A plain blocking TCP connection to 127.0.0.1, for tests that speak bytes: HTTP by hand,
/// garbage before a handshake, half-open connections, WebSocket frames written by hand.
public final class RawSocket: @unchecked Sendable {
    public let fd: Int32

    public init(port: Int, receiveBufferBytes: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError.system("socket", errno) }
        if var size = receiveBufferBytes.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw RawSocketError.system("connect", code)
        }
    }

    /// Takes over a connected socket (one a test's own listener accepted).
    public init(connected fd: Int32) {
        self.fd = fd
    }

    deinit { close(fd) }

    public func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw RawSocketError.system("send", errno) }
            offset += written
        }
    }

    /// Reads what is available within `timeout`: at least one byte, or [] at EOF.
    public func read(max: Int = 65536, timeout: Duration) throws -> [UInt8] {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&poller, 1, milliseconds)
        guard ready > 0 else { throw RawSocketError.timedOut }
        var buffer = [UInt8](repeating: 0, count: max)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
        guard count >= 0 else { throw RawSocketError.system("recv", errno) }
        return Array(buffer[..<count])
    }

    /// Reads until the peer closes.
    public func readAll(timeout: Duration) throws -> [UInt8] {
        var all: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let chunk = try read(timeout: deadline - .now)
            if chunk.isEmpty { return all }
            all += chunk
        }
        throw RawSocketError.timedOut
    }

    /// Reads exactly `count` bytes.
    public func read(exactly count: Int, timeout: Duration) throws -> [UInt8] {
        var all: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while all.count < count {
            guard ContinuousClock.now < deadline else { throw RawSocketError.timedOut }
            let chunk = try read(max: count - all.count, timeout: deadline - .now)
            if chunk.isEmpty { throw RawSocketError.closed }
            all += chunk
        }
        return all
    }
}

extension RawSocket {
    public func write(_ text: String) throws { try write(Array(text.utf8)) }

    /// Reads an HTTP response's status line and headers, up to and including the blank line
    /// (byte by byte, so nothing after them is consumed).
    public func readHTTPHeaders(timeout: Duration = .seconds(10)) throws -> String {
        var header: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while !header.ends(with: [13, 10, 13, 10]) {
            guard ContinuousClock.now < deadline else { throw RawSocketError.timedOut }
            let byte = try read(max: 1, timeout: deadline - .now)
            if byte.isEmpty { throw RawSocketError.closed }
            header += byte
        }
        return String(decoding: header, as: UTF8.self)
    }

    /// Sends `GET path` on this connection (kept alive) and reads the response, whose body is
    /// framed by its Content-Length.
    public func httpGET(_ path: String, timeout: Duration = .seconds(10)) throws -> (status: Int, headers: String, body: [UInt8]) {
        try http("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", timeout: timeout)
    }

    /// Sends a whole request as written and reads the response, framed by its Content-Length.
    public func http(_ request: String, timeout: Duration = .seconds(10)) throws -> (status: Int, headers: String, body: [UInt8]) {
        try write(request)
        let headers = try readHTTPHeaders(timeout: timeout)
        let status = headers.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let length = headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        return (status, headers, try read(exactly: length, timeout: timeout))
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

public enum RawSocketError: Error, Equatable, CustomStringConvertible {
    case system(String, Int32)
    case timedOut
    case closed
    case handshakeRefused(String)
    case protocolViolation(String)

    public var description: String {
        switch self {
        case .system(let call, let code): return "\(call): \(String(cString: strerror(code)))"
        case .timedOut: return "timed out"
        case .closed: return "connection closed"
        case .handshakeRefused(let response): return "handshake refused: \(response)"
        case .protocolViolation(let what): return "protocol violation: \(what)"
        }
    }
}

/// A minimal WebSocket client over `RawSocket`, written by hand so tests control every byte:
/// it can send what a library would refuse (oversize, binary, invalid UTF-8, fragments) and it
/// can simply stop reading.
public final class RawWebSocket: @unchecked Sendable {
    public let socket: RawSocket
    private var buffer: [UInt8] = []

    public enum Frame: Equatable {
        case text([UInt8])
        case binary([UInt8])
        case close(code: UInt16?, reason: String)
        case ping([UInt8])
        case pong([UInt8])
    }

    /// The server's 101 response (status line and headers), e.g. to see which extensions it accepted.
    public private(set) var handshakeResponse = ""
    /// RSV1 of the frame `receiveFrame` returned last: with permessage-deflate negotiated, the
    /// "compressed" bit (the payload is then deflated, as sent; this client inflates nothing).
    public private(set) var lastFrameCompressed = false

    /// `extensions`: a `Sec-WebSocket-Extensions` offer, e.g. "permessage-deflate" (nil: none).
    public init(port: Int, subprotocol: String? = "tether.v1", extensions: String? = nil, receiveBufferBytes: Int? = nil) throws {
        socket = try RawSocket(port: port, receiveBufferBytes: receiveBufferBytes)
        var request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let subprotocol { request += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        if let extensions { request += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        request += "\r\n"
        try socket.write(Array(request.utf8))
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            if let end = buffer.firstRange(of: terminator) {
                let response = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                guard response.hasPrefix("HTTP/1.1 101") else { throw RawSocketError.handshakeRefused(response) }
                handshakeResponse = response
                return
            }
            guard ContinuousClock.now < deadline else { throw RawSocketError.timedOut }
            let chunk = try socket.read(timeout: deadline - .now)
            if chunk.isEmpty { throw RawSocketError.handshakeRefused(String(decoding: buffer, as: UTF8.self)) }
            buffer += chunk
        }
    }

    // MARK: Sending

    /// Writes one frame, masked as RFC 6455 requires of clients (unless `masked` is false).
    public func sendFrame(opcode: UInt8, payload: [UInt8], fin: Bool = true, masked: Bool = true) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            frame.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame.append(maskBit | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        if masked {
            let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
            frame += key
            frame += payload.enumerated().map { $0.element ^ key[$0.offset & 3] }
        } else {
            frame += payload
        }
        try socket.write(frame)
    }

    public func sendText(_ text: String) throws { try sendFrame(opcode: 1, payload: Array(text.utf8)) }
    public func sendText(bytes: [UInt8]) throws { try sendFrame(opcode: 1, payload: bytes) }
    public func sendBinary(_ bytes: [UInt8]) throws { try sendFrame(opcode: 2, payload: bytes) }
    public func send(json: JSON) throws { try sendFrame(opcode: 1, payload: json.encoded()) }

    public func sendClose(code: UInt16 = 1000) throws {
        try sendFrame(opcode: 8, payload: [UInt8(code >> 8), UInt8(code & 0xFF)])
    }

    // MARK: Receiving

    /// The next frame from the server; pings are answered and skipped unless `returnPings`.
    public func receiveFrame(timeout: Duration = .seconds(5), returnPings: Bool = false) throws -> Frame {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let frame = try parseFrame() {
                if case .ping(let payload) = frame, !returnPings {
                    try? sendFrame(opcode: 10, payload: payload)
                    continue
                }
                return frame
            }
            guard ContinuousClock.now < deadline else { throw RawSocketError.timedOut }
            let chunk = try socket.read(timeout: deadline - .now)
            if chunk.isEmpty { throw RawSocketError.closed }
            buffer += chunk
        }
    }

    /// The next text message, parsed; throws on a close frame.
    public func receiveJSON(timeout: Duration = .seconds(5)) throws -> JSON {
        while true {
            switch try receiveFrame(timeout: timeout) {
            case .text(let bytes): return try JSONParser().parse(bytes)
            case .close(let code, let reason): throw RawWebSocketClosed(code: code, reason: reason)
            default: continue
            }
        }
    }

    /// Reads messages until one satisfies `predicate`; returns it (others are dropped).
    public func receiveJSON(timeout: Duration = .seconds(5), until predicate: (JSON) -> Bool) throws -> JSON {
        let deadline = ContinuousClock.now + timeout
        while true {
            let message = try receiveJSON(timeout: max(.milliseconds(1), deadline - .now))
            if predicate(message) { return message }
        }
    }

    /// Reads until the server's close frame; returns its code.
    public func receiveClose(timeout: Duration = .seconds(5)) throws -> UInt16? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if case .close(let code, _) = try receiveFrame(timeout: max(.milliseconds(1), deadline - .now)) { return code }
        }
    }

    private func parseFrame() throws -> Frame? {
        guard buffer.count >= 2 else { return nil }
        if buffer[1] & 0x80 != 0 { throw RawSocketError.protocolViolation("server frames must not be masked") }
        guard let (frame, size) = WireFrame.parse(buffer) else { return nil }
        lastFrameCompressed = frame.rsv & 0x40 != 0
        let (opcode, payload) = (frame.opcode, frame.payload)
        buffer.removeSubrange(..<size)
        switch opcode {
        case 1: return .text(payload)
        case 2: return .binary(payload)
        case 8:
            let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
            return .close(code: code, reason: String(decoding: payload.dropFirst(2), as: UTF8.self))
        case 9: return .ping(payload)
        case 10: return .pong(payload)
        default: throw RawSocketError.protocolViolation("opcode \(opcode)")
        }
    }
}

public struct RawWebSocketClosed: Error, Equatable {
    public let code: UInt16?
    public let reason: String
}
