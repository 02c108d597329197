import Foundation
import Testing
@testable import TetherTransport
import TetherTestSupport

/// Plain HTTP requests on the WebSocket port, as curl and backends send them: POST bodies whole
/// to the delegate, refused with 413 past the bound (before reading it, when Content-Length says
/// so); the query string and the allow-listed headers handed on.
@Suite("HTTP requests: bodies, the query and the headers an API reads")
struct HTTPRequestTests {
    @Test func aBodyReachesTheDelegateWhole() throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let body = String(repeating: "0123456789", count: 2_000)  // in several reads
        let echoed = try RawSocket(port: port).http("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(echoed.status == 200 && String(decoding: echoed.body, as: UTF8.self) == body)
        let empty = try RawSocket(port: port).http("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
        #expect(empty.status == 200 && empty.body.isEmpty)
        let none = try RawSocket(port: port).http("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(none.status == 200 && none.body.isEmpty, "without a Content-Length there is no body")
    }

    /// One request per connection: lws 4.1 misreads a request with a body that arrives pipelined
    /// behind another (its request line handed over as the body, then its thread spinning). The
    /// answer says `Connection: close`, the connection ends, and the thread stays idle.
    @Test func aPipelinedRequestIsNotReadAndTheThreadStaysIdle() throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let post = "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\nhi"
        for first in ["GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "GET /later HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", post] {
            let socket = try RawSocket(port: port)
            try socket.write(first + post)
            let answer = String(decoding: try socket.readAll(timeout: .seconds(5)), as: UTF8.self)
            #expect(answer.components(separatedBy: "HTTP/1.1 ").count == 2, "one answer, then the connection closed: \(answer)")
            #expect(answer.lowercased().contains("connection: close"))
        }
        let before = server.shardStatistics.map(\.cpuSeconds).reduce(0, +)
        Thread.sleep(forTimeInterval: 1.5)
        let used = server.shardStatistics.map(\.cpuSeconds).reduce(0, +) - before
        #expect(used < 0.5, "the socket threads used \(used) s of CPU in 1.5 s while idle")
        #expect(try RawSocket(port: port).httpGET("/healthz").status == 200)
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

    /// The query string and the allow-listed headers reach the delegate; no other header does.
    @Test func theQueryAndTheHeadersAnAPIReadsReachTheDelegate() throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let answer = try RawSocket(port: port).http("GET /request?x=1&name=a%3Ab HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            + "If-None-Match: \"e1:7\"\r\nIdempotency-Key: 42\r\nTether-Client: backend-1\r\nLast-Event-ID: e1:7\r\nX-Other: no\r\n\r\n")
        #expect(String(decoding: answer.body, as: UTF8.self)
            == #"query x=1&name=a:b headers accept=text/event-stream; idempotency-key=42; if-none-match="e1:7"; last-event-id=e1:7; tether-client=backend-1"#)
        let bare = try RawSocket(port: port).httpGET("/request")
        #expect(String(decoding: bare.body, as: UTF8.self) == "query - headers ")
    }

    /// HEAD is the GET's answer without its body; OPTIONS names the methods.
    @Test func headAnswersWithoutTheBodyAndOptionsNamesTheMethods() throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let socket = try RawSocket(port: port)
        try socket.write("HEAD /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let head = String(decoding: try socket.readAll(timeout: .seconds(5)), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200") && head.lowercased().contains("content-length: 300000"), "\(head)")
        #expect(head.hasSuffix("\r\n\r\n"), "no body came: \(head.count) bytes")
        let big = try RawSocket(port: port).httpGET("/big")
        #expect(big.status == 200 && big.body.count == 300_000)
        let options = try RawSocket(port: port).http("OPTIONS /rooms HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(options.status == 200 && options.headers.lowercased().contains("allow: get, head, post, delete, options"), "\(options.headers)")
    }
}

