import Foundation
import Testing
@testable import TetherTransport
import TetherTestSupport

/// POST bodies on the WebSocket port, as curl and backends send them: whole to the delegate,
/// refused with 413 past the bound (before reading it, when Content-Length says so).
@Suite("HTTP POST bodies")
struct HTTPBodyTests {
    @Test func aBodyReachesTheDelegateWholeAndTheConnectionCarriesOn() throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let socket = try RawSocket(port: port)
        let body = String(repeating: "0123456789", count: 2_000)  // in several reads
        let echoed = try socket.http("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(echoed.status == 200 && String(decoding: echoed.body, as: UTF8.self) == body)
        let empty = try socket.http("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
        #expect(empty.status == 200 && empty.body.isEmpty)
        #expect(try socket.httpGET("/healthz").status == 200, "the same connection serves the next request")
    }

    @Test func aBodyOverTheBoundIsRefusedWith413() throws {
        let (server, port, _) = try startServer { $0.maxHTTPBodyBytes = 1_000 }
        defer { server.shutdown(deadline: .seconds(2)) }
        let declared = try RawSocket(port: port)
        try declared.write("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n")
        let refused = try declared.readHTTPHeaders()
        #expect(refused.hasPrefix("HTTP/1.1 413"), "\(refused)")
        let within = try RawSocket(port: port).http("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 1_000))
        #expect(within.status == 200 && within.body.count == 1_000)
    }

    /// A body sent in chunks without a length (curl's `-H "Transfer-Encoding: chunked"`) is
    /// answered 411: lws 4.1 reads no chunked request body.
    @Test func aChunkedBodyIsAskedForALength() throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let socket = try RawSocket(port: port)
        try socket.write("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        let answer = try socket.readHTTPHeaders()
        #expect(answer.hasPrefix("HTTP/1.1 411"), "\(answer)")
    }
}
