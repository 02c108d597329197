import CLibWebSockets
import Foundation

/// A WebSocket server written by hand on 127.0.0.1 (OS-chosen port): it completes one client's
/// handshake and then sends whatever bytes a test gives, so client conformance tests can send
/// what no server library would (masked frames, reserved bits, oversize control frames).
public final class RawWebSocketServer: @unchecked Sendable {
    public let port: Int
    private let listener: Int32

    public init() throws {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = listener
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0, listen(fd, 16) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard rc == 0 else {
            close(listener)
            throw RawSocketError.system("listen", errno)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(listener) }

    /// Accepts the next connection and answers its upgrade with 101, echoing the subprotocol
    /// it offered. Returns the socket, positioned after the request.
    public func acceptWebSocket(timeout: Duration = .seconds(5)) throws -> RawSocket {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout.components.seconds * 1000)) > 0 else { throw RawSocketError.timedOut }
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else { throw RawSocketError.system("accept", errno) }
        let socket = RawSocket(connected: fd)
        let request = try socket.readHTTPHeaders(timeout: timeout)
        func header(_ name: String) -> String? {
            request.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name + ":") }
                .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
        }
        guard let key = header("sec-websocket-key") else { throw RawSocketError.protocolViolation("no Sec-WebSocket-Key") }
        var response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        response += "Sec-WebSocket-Accept: \(Self.acceptValue(key))\r\n"
        if let offered = header("sec-websocket-protocol")?.split(separator: ",").first {
            response += "Sec-WebSocket-Protocol: \(offered.trimmingCharacters(in: .whitespaces))\r\n"
        }
        try socket.write(response + "\r\n")
        return socket
    }

    /// RFC 6455 §4.2.2: base64(SHA-1(key + the protocol's GUID)).
    static func acceptValue(_ key: String) -> String {
        var digest = [UInt8](repeating: 0, count: 20)
        let input = Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)
        _ = lws_SHA1(input, input.count, &digest)
        var encoded = [CChar](repeating: 0, count: 64)
        let count = digest.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { lws_b64_encode_string($0.baseAddress, 20, &encoded, Int32(encoded.count)) }
        }
        return String(decoding: encoded[..<Int(max(0, count))].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
