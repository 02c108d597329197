import Foundation
import Testing
@testable import TetherTransport
import TetherTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Starts an echo server on 127.0.0.1 with an OS-chosen port.
func startServer(
    _ configure: (inout WebSocketServerConfiguration) -> Void = { _ in },
    delegate: EchoServer = EchoServer()
) throws -> (server: WebSocketServer, port: Int, delegate: EchoServer) {
    var configuration = WebSocketServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configure(&configuration)
    let server = WebSocketServer(configuration: configuration)
    let port = try server.start(delegate: delegate)
    return (server, port, delegate)
}

func startClient(_ configure: (inout WebSocketClientConfiguration) -> Void = { _ in }) throws -> WebSocketClient {
    var configuration = WebSocketClientConfiguration()
    configure(&configuration)
    let client = WebSocketClient(configuration: configuration)
    try client.start()
    return client
}

@Suite("TetherTransport", .serialized, .timeLimit(.minutes(3)))
struct TransportTests {

    // MARK: Echo

    /// Messages of many sizes, including one far bigger than lws' 4 KiB receive chunks (so both
    /// the no-copy path and reassembly are used), come back complete and in order.
    func echoRoundTrip(secure: Bool, serverTLS: TLSFiles?, trust: TLSTrust) async throws {
        let (server, port, echo) = try startServer { $0.tls = serverTLS }
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient { $0.trust = trust }
        defer { client.shutdown() }

        var messages = (0..<500).map { "message \($0) " + String(repeating: "x", count: $0 % 300) }
        messages.insert(String(repeating: "0123456789", count: 20_000), at: 250)  // 200 KB
        messages.append("")
        messages.append("한글과 emoji 🎉 survive")
        let recorder = RecordingClient()
        recorder.initialMessages = messages
        try client.connect(url: "\(secure ? "wss" : "ws")://127.0.0.1:\(port)/", delegate: recorder)

        try await eventually("all echoes") { recorder.state.current.texts.count >= messages.count || recorder.finished }
        let state = recorder.state.current
        #expect(state.failure == nil)
        #expect(state.texts.count == messages.count)
        #expect(state.texts == messages)
        #expect(state.subprotocol == "tether.v1")
        #expect(state.callbackThreads.count == 1)

        let serverState = echo.state.current
        #expect(serverState.subprotocols == ["tether.v1"])
        #expect(serverState.remoteAddresses == ["127.0.0.1"])
        #expect(serverState.callbackThreads.count == 1)
        #expect(serverState.callbackThreads.isDisjoint(with: state.callbackThreads))

        client.shutdown()
        try await eventually("server saw the close") { echo.state.current.closed.count == 1 }
        #expect(recorder.state.current.closeCode == 1000)
        #expect(echo.state.current.closeCodes.values.first == 1000)
    }

    @Test func echoOverPlainWebSocket() async throws {
        try await echoRoundTrip(secure: false, serverTLS: nil, trust: .system)
    }

    @Test func echoOverTLSTrustingTheCAFile() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let files = TLSFiles(certificatePath: certificate.certificate, privateKeyPath: certificate.key)
        try await echoRoundTrip(secure: true, serverTLS: files, trust: .caFile(certificate.certificate))
    }

    @Test func echoOverTLSInInsecureMode() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let files = TLSFiles(certificatePath: certificate.certificate, privateKeyPath: certificate.key)
        try await echoRoundTrip(secure: true, serverTLS: files, trust: .insecure)
    }

    @Test func tlsWithTheWrongCAFailsWithAClearReason() async throws {
        let certificate = try TestCertificate()
        let otherCA = try TestCertificate()
        defer { certificate.remove(); otherCA.remove() }
        let files = TLSFiles(certificatePath: certificate.certificate, privateKeyPath: certificate.key)
        let (server, port, echo) = try startServer { $0.tls = files }
        defer { server.shutdown(deadline: .seconds(1)) }
        let client = try startClient { $0.trust = .caFile(otherCA.certificate) }
        defer { client.shutdown() }

        let recorder = RecordingClient()
        try client.connect(url: "wss://127.0.0.1:\(port)/", delegate: recorder)
        try await eventually("connect failure") { recorder.finished }
        let failure = try #require(recorder.state.current.failure)
        #expect(failure.contains("TLS"))
        #expect(failure.contains("127.0.0.1:\(port)"))
        #expect(!recorder.state.current.connected)
        #expect(echo.state.current.opened.isEmpty)

        // A plain ws:// client against the wss:// port fails too, without hurting the server.
        let plain = RecordingClient()
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: plain)
        try await eventually("plain connect failure") { plain.finished }
        #expect(plain.state.current.failure != nil)
    }

    @Test func missingCertificateFilesThrowATLSError() throws {
        let server = WebSocketServer(configuration: .init(
            host: "127.0.0.1", port: 0, tls: TLSFiles(certificatePath: "/nonexistent/cert.pem", privateKeyPath: "/nonexistent/key.pem")))
        #expect(throws: TransportError.self) { try server.start(delegate: EchoServer()) }
        do {
            try server.start(delegate: EchoServer())
        } catch let error as TransportError {
            guard case .tls(let message) = error else { Issue.record("expected .tls, got \(error)"); return }
            #expect(message.contains("/nonexistent/cert.pem"))
        }
    }

    // MARK: Limits and binary

    @Test func oversizedMessageClosesWith1009AndOthersKeepWorking() async throws {
        let (server, port, echo) = try startServer { $0.maxMessageBytes = 1_000 }
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient()
        defer { client.shutdown() }

        let bystander = RecordingClient()
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: bystander)
        let offender = RecordingClient()
        offender.initialMessages = ["small first", String(repeating: "y", count: 1_001)]
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: offender)

        try await eventually("offender closed") { offender.finished }
        #expect(offender.state.current.texts == ["small first"])
        #expect(offender.state.current.closeCode == 1009)
        try await eventually("server saw the close") { echo.state.current.closed.count == 1 }
        #expect(echo.state.current.closeCodes.values.first == 1009)

        // Exactly at the limit is fine, and the other connection still echoes.
        let atLimit = String(repeating: "z", count: 1_000)
        try await eventually("bystander connected") { bystander.connected }
        try sendFromLoop(client, bystander: bystander, texts: ["still here", atLimit])
        try await eventually("bystander echoes") { bystander.state.current.texts.count == 2 }
        #expect(bystander.state.current.texts == ["still here", atLimit])
        #expect(!bystander.finished)
    }

    /// Queues texts on the (only) open connection of `bystander`, on the client's loop.
    func sendFromLoop(_ client: WebSocketClient, bystander: RecordingClient, texts: [String]) throws {
        let connection = try #require(bystander.lastConnection)
        client.execute {
            for text in texts { Outbox.enqueue(connection, Array(text.utf8)) }
        }
    }

    @Test func fragmentedMessagesAreReassembledAndLimited() async throws {
        let (server, port, echo) = try startServer { $0.maxMessageBytes = 1_000 }
        defer { server.shutdown(deadline: .seconds(2)) }

        let socket = try RawWebSocket(port: port)
        let part1 = [UInt8](repeating: 0x61, count: 300), part2 = [UInt8](repeating: 0x62, count: 300)
        try socket.sendFrame(opcode: 1, payload: part1, fin: false)
        try socket.sendFrame(opcode: 0, payload: part2, fin: false)
        try socket.sendFrame(opcode: 0, payload: Array("end".utf8), fin: true)
        #expect(try socket.receiveFrame() == .text(part1 + part2 + Array("end".utf8)))

        // Fragments that add up to more than the limit: 1009.
        try socket.sendFrame(opcode: 1, payload: part1, fin: false)
        try socket.sendFrame(opcode: 0, payload: part1, fin: false)
        try socket.sendFrame(opcode: 0, payload: part1, fin: false)
        try socket.sendFrame(opcode: 0, payload: part1, fin: true)
        #expect(try socket.receiveClose() == 1009)
        try? socket.sendClose(code: 1009)
        try await eventually("server closed it") { echo.state.current.closed.count == 1 }
    }

    @Test func invalidUTF8ClosesWith1007() async throws {
        let (server, port, echo) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let socket = try RawWebSocket(port: port)
        try socket.sendFrame(opcode: 1, payload: [0x61, 0xff, 0xfe, 0x62])
        #expect(try socket.receiveClose() == 1007)
        try? socket.sendClose(code: 1007)
        try await eventually("server closed it") { echo.state.current.closed.count == 1 }
        #expect(echo.state.current.textCount == 0)
    }

    @Test func binaryFramesReachReceivedBinary() async throws {
        let (server, port, echo) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient()
        defer { client.shutdown() }
        let recorder = RecordingClient()
        let connection = try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: recorder)
        try await eventually("connected") { recorder.connected }
        let payload: [UInt8] = (0..<5_000).map { UInt8($0 % 256) }
        client.execute { Outbox.enqueue(connection, payload, binary: true) }
        try await eventually("binary echo") { !recorder.state.current.binaries.isEmpty }
        #expect(echo.state.current.binaries == [payload])
        #expect(echo.state.current.textCount == 0)
        #expect(recorder.state.current.binaries == [payload])
    }

    // MARK: HTTP

    @Test func httpEndpointsAnswerThroughTheDelegate() async throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }

        let socket = try RawSocket(port: port)
        let health = try socket.httpGET("/healthz")
        #expect(health.status == 200)
        #expect(String(decoding: health.body, as: UTF8.self) == "ok")
        // /metrics, with a query string that is not part of the path.
        let metrics = try RawSocket(port: port).httpGET("/metrics?x=1")
        #expect(metrics.status == 200)
        #expect(metrics.headers.lowercased().contains("content-type: text/plain; version=0.0.4"))
        #expect(String(decoding: metrics.body, as: UTF8.self).contains("tether_connections 0"))

        let other = try RawSocket(port: port)
        #expect(String(decoding: try other.httpGET("/nope").body, as: UTF8.self) == "GET /nope -")
        let big = try RawSocket(port: port).httpGET("/big")
        #expect(big.status == 200)
        #expect(big.body.count == 300_000)

        let put = try RawSocket(port: port)
        try put.write("PUT /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\nhi")
        let refused = try put.readHTTPHeaders()
        #expect(refused.hasPrefix("HTTP/1.1 405") && refused.lowercased().contains("allow: get, head, post, delete, options"))
    }

    @Test func deleteRequestsCarryTheirAuthorizationAndAnswersMayComeLater() async throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }

        let socket = try RawSocket(port: port)
        let deleted = try socket.http("DELETE /rooms/a%3Ab HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer xyz\r\n\r\n")
        #expect(deleted.status == 200)
        #expect(String(decoding: deleted.body, as: UTF8.self) == "DELETE /rooms/a:b Bearer xyz", "the path arrives decoded")
        // A connection waits for an answer given later, from another thread.
        let later = try RawSocket(port: port).httpGET("/later")
        #expect(later.status == 200 && String(decoding: later.body, as: UTF8.self) == "later")

        // A page of another origin may change nothing (the upgrades' rule); its own page may.
        let foreign = try RawSocket(port: port).http("DELETE /rooms/x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: http://evil.example\r\n\r\n")
        #expect(foreign.status == 403)
        let own = try RawSocket(port: port).http("DELETE /rooms/x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: http://127.0.0.1:\(port)\r\n\r\n")
        #expect(own.status == 200)
    }

    @Test func theClientSendsPlainHTTPRequestsWithItsTrust() async throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient()
        defer { client.shutdown() }

        let deleted = try await client.request("DELETE", path: "/rooms/a%3Ab", on: "ws://127.0.0.1:\(port)", authorization: "Bearer xyz")
        #expect(deleted.status == 200)
        #expect(String(decoding: deleted.body, as: UTF8.self) == "DELETE /rooms/a:b Bearer xyz")
        let later = try await client.request("GET", path: "/later", on: "ws://127.0.0.1:\(port)")
        #expect(later.status == 200 && String(decoding: later.body, as: UTF8.self) == "later")
        let big = try await client.request("GET", path: "/big", on: "ws://127.0.0.1:\(port)")
        #expect(big.body.count == 300_000)
        let refused = try await client.request("PUT", path: "/healthz", on: "ws://127.0.0.1:\(port)")
        #expect(refused.status == 405)

        let nobody = try RefusingPort()
        await #expect(throws: HTTPRequestError.self) { try await client.request("GET", path: "/rooms", on: nobody.url) }
        do {
            _ = try await client.request("GET", path: "/rooms", on: nobody.url)
        } catch {
            #expect(error.description.contains("nothing answers"), "\(error)")
        }
    }

    @Test func clientsOfferingNoSubprotocolAreAccepted() async throws {
        let (server, port, echo) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient()
        defer { client.shutdown() }
        let recorder = RecordingClient()
        recorder.initialMessages = ["plain"]
        try client.connect(url: "ws://127.0.0.1:\(port)", subprotocol: nil, delegate: recorder)
        try await eventually("echo") { recorder.state.current.texts == ["plain"] }
        #expect(echo.state.current.subprotocols == [nil])
        #expect(recorder.state.current.subprotocol == nil)

        // A raw client offering only an unknown subprotocol is refused with 400, not dropped.
        do {
            _ = try RawWebSocket(port: port, subprotocol: "other.v9")
            Issue.record("a handshake offering only other.v9 was accepted")
        } catch RawSocketError.handshakeRefused(let answer) {
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
        }
        #expect(echo.state.current.opened.count == 1)
    }

    @Test func garbageBeforeTheHandshakeDoesNotHurtTheServer() async throws {
        let (server, port, echo) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }

        var random = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let socket = try RawSocket(port: port)
            let garbage: [UInt8] = round % 2 == 0
                ? (0..<2_000).map { _ in UInt8.random(in: 0...255, using: &random) }
                : Array("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 99\r\n\r\n".utf8)
            try? socket.write(garbage)
            _ = try? socket.readAll(timeout: .seconds(10))
        }
        // Half a request, then hang up.
        do {
            let socket = try RawSocket(port: port)
            try socket.write("GET /healthz HTT")
        }
        let health = try RawSocket(port: port).httpGET("/healthz")
        #expect(health.status == 200)
        #expect(echo.state.current.opened.isEmpty)

        let client = try startClient()
        defer { client.shutdown() }
        let recorder = RecordingClient()
        recorder.initialMessages = ["after garbage"]
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: recorder)
        try await eventually("echo") { recorder.state.current.texts == ["after garbage"] }
    }

    // MARK: Threads

    @Test func executeRunsOnTheLoopThreadInOrderPerPoster() async throws {
        let (server, _, echo) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }

        // Learn the loop thread through a closure.
        let loopKey = Locked<UInt?>(nil)
        server.execute { loopKey.withLock { $0 = currentThreadKey() } }
        try await eventually("first closure") { loopKey.current != nil }

        let posters = 8, perPoster = 2_000
        let log = Locked<[(poster: Int, sequence: Int, thread: UInt)]>([])
        let posterThreads = Locked<Set<UInt>>([])
        await withTaskGroup(of: Void.self) { group in
            for poster in 0..<posters {
                group.addTask {
                    let thread = Thread {
                        posterThreads.withLock { _ = $0.insert(currentThreadKey()) }
                        for sequence in 0..<perPoster {
                            server.execute { log.withLock { $0.append((poster, sequence, currentThreadKey())) } }
                        }
                    }
                    thread.start()
                }
            }
        }
        try await eventually("all closures ran") { log.current.count == posters * perPoster }
        let entries = log.current
        let loop = try #require(loopKey.current)
        #expect(entries.allSatisfy { $0.thread == loop })
        #expect(!posterThreads.current.contains(loop))
        for poster in 0..<posters {
            let sequences = entries.filter { $0.poster == poster }.map(\.sequence)
            #expect(sequences == Array(0..<perPoster))
        }
        #expect(echo.state.current.callbackThreads.isSubset(of: [loop]))
    }

    // MARK: Shutdown

    @Test func shutdownDrainsClosesWith1001AndLeavesNoThread() async throws {
        let echo = EchoServer()
        echo.goodbye = "bye"
        let (server, port, _) = try startServer(delegate: echo)
        let client = try startClient()
        defer { client.shutdown() }

        var recorders: [RecordingClient] = []
        for _ in 0..<5 {
            let recorder = RecordingClient()
            recorder.initialMessages = ["hello"]
            try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: recorder)
            recorders.append(recorder)
        }
        try await eventually("all echoed") { recorders.allSatisfy { $0.state.current.texts == ["hello"] } }
        // Learn the server loop's Linux thread id (recorded by the delegate).
        let loopTID = try #require(echo.state.current.loopTID)
        #expect(threadExists(loopTID))

        let started = ContinuousClock.now
        await server.shutdownAsync(deadline: .seconds(5))
        let took = ContinuousClock.now - started
        #expect(took < .seconds(4))
        #expect(echo.state.current.shutdownCalled)
        #expect(echo.state.current.closed.count == 5)
        #expect(!threadExists(loopTID))

        try await eventually("clients saw the close") { recorders.allSatisfy(\.finished) }
        for recorder in recorders {
            let state = recorder.state.current
            #expect(state.texts == ["hello", "bye"])
            #expect(state.closeCode == 1001)
        }
        // The server is gone: execute refuses work, new connections fail.
        #expect(server.execute {} == false)
        let late = RecordingClient()
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: late)
        try await eventually("late connect fails") { late.finished }
        #expect(late.state.current.failure != nil)
    }

    @Test func startAndShutdownLeaveNoThreadBehind() async throws {
        for _ in 0..<5 {
            let (server, _, _) = try startServer()
            let tid = Locked<Int?>(nil)
            server.execute { tid.withLock { $0 = linuxThreadID() } }
            try await eventually("loop thread id") { tid.current != nil }
            let loopTID = try #require(tid.current)
            server.shutdown(deadline: .seconds(1))
            #expect(!threadExists(loopTID))

            let client = try startClient()
            let clientTID = Locked<Int?>(nil)
            client.execute { clientTID.withLock { $0 = linuxThreadID() } }
            try await eventually("client loop thread id") { clientTID.current != nil }
            client.shutdown()
            #expect(!threadExists(try #require(clientTID.current)))
        }
    }

    @Test func clientShutdownClosesItsConnections() async throws {
        let (server, port, echo) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient()
        let recorder = RecordingClient()
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: recorder)
        try await eventually("connected") { recorder.connected }
        client.shutdown()
        #expect(recorder.state.current.closed)
        try await eventually("server saw the close") { echo.state.current.closed.count == 1 }
        #expect(echo.state.current.closeCodes.values.first == 1000)
        #expect(throws: TransportError.notRunning) {
            try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: RecordingClient())
        }
    }

    @Test func serverCanCloseWithACode() async throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient()
        defer { client.shutdown() }
        let recorder = RecordingClient()
        recorder.initialMessages = ["echo me", "close:1008"]
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: recorder)
        try await eventually("closed") { recorder.finished }
        #expect(recorder.state.current.texts == ["echo me"])
        #expect(recorder.state.current.closeCode == 1008)
    }

    // MARK: Connect failures

    @Test func connectingToAClosedPortFailsClearly() async throws {
        let client = try startClient()
        defer { client.shutdown() }
        let port = try freePort()
        let recorder = RecordingClient()
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: recorder)
        try await eventually("failure") { recorder.finished }
        let failure = try #require(recorder.state.current.failure)
        #expect(failure.contains("127.0.0.1:\(port)"))
        #expect(failure.lowercased().contains("refused") || failure.lowercased().contains("connect"))
        #expect(!recorder.state.current.connected)
        #expect(!recorder.state.current.closed)
    }

    @Test func connectAttemptsTimeOutOrCanBeCancelled() async throws {
        let listener = try SilentListener()
        let client = try startClient { $0.connectTimeout = .seconds(1) }
        defer { client.shutdown() }

        let slow = RecordingClient()
        let started = ContinuousClock.now
        try client.connect(url: "ws://127.0.0.1:\(listener.port)/", delegate: slow)
        try await eventually("timeout", timeout: .seconds(8)) { slow.finished }
        #expect(ContinuousClock.now - started < .seconds(6))
        let failure = try #require(slow.state.current.failure)
        #expect(failure.contains("127.0.0.1:\(listener.port)"))
        #expect(failure.lowercased().contains("timed out"))

        let cancelled = RecordingClient()
        let connection = try client.connect(url: "ws://127.0.0.1:\(listener.port)/", delegate: cancelled)
        client.execute { connection.close() }
        try await eventually("cancelled") { cancelled.finished }
        #expect(cancelled.state.current.failure?.contains("cancelled") == true)
        #expect(!cancelled.state.current.connected)
    }

    @Test func silentSocketsAreDroppedAfterTheHandshakeTimeout() async throws {
        let (server, port, echo) = try startServer { $0.handshakeTimeout = .seconds(1) }
        defer { server.shutdown(deadline: .seconds(2)) }
        let socket = try RawSocket(port: port)
        let started = ContinuousClock.now
        #expect(try socket.readAll(timeout: .seconds(10)).isEmpty)  // the server hangs up without a word
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(echo.state.current.opened.isEmpty)
    }

    @Test func malformedURLsThrow() throws {
        let client = try startClient()
        defer { client.shutdown() }
        for url in ["", "localhost:8080", "http://127.0.0.1/", "ws://", "ws://:80/", "ws://host:0/",
                    "ws://host:65536/", "ws://host:12ab/", "ws://a b/", "ws://user@host/", "ws://[::1/",
                    "ws://h:1:2/"] {
            #expect(throws: TransportError.self, "\(url)") {
                try client.connect(url: url, delegate: RecordingClient())
            }
        }
        let target = try WebSocketURL(parsing: "wss://Example.com/room?x=1#frag")
        #expect(target == WebSocketURL(secure: true, host: "Example.com", port: 443, path: "/room?x=1"))
        #expect(try WebSocketURL(parsing: "ws://[::1]:9000").description == "ws://[::1]:9000/")
        #expect(try WebSocketURL(parsing: "WS://h?q").path == "/?q")
    }

    @Test func listeningOnABusyPortThrows() throws {
        let (server, port, _) = try startServer()
        defer { server.shutdown(deadline: .seconds(1)) }
        let second = WebSocketServer(configuration: .init(host: "127.0.0.1", port: port))
        do {
            try second.start(delegate: EchoServer())
            Issue.record("second server started on a busy port")
        } catch let error as TransportError {
            #expect(error == .addressInUse("127.0.0.1:\(port)"))
        }
        #expect(throws: TransportError.alreadyStarted) { try server.start(delegate: EchoServer()) }
    }

    @Test func connectionsBeyondTheLimitAreRefused() async throws {
        let (server, port, echo) = try startServer { $0.maxConnections = 2 }
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient()
        defer { client.shutdown() }
        let first = RecordingClient(), second = RecordingClient()
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: first)
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: second)
        try await eventually("two connected") { first.connected && second.connected }
        let third = RecordingClient()
        try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: third)
        try await eventually("third refused") { third.finished }
        #expect(third.state.current.failure != nil)
        #expect(echo.state.current.opened.count == 2)
        // The first two are unaffected.
        try sendFromLoop(client, bystander: first, texts: ["ping"])
        try await eventually("echo") { first.state.current.texts == ["ping"] }
    }

    @Test func silentPeersAreHungUpByTheIdlePolicy() async throws {
        let (server, port, echo) = try startServer {
            $0.pingInterval = .seconds(1)
            $0.idleTimeout = .seconds(2)
        }
        defer { server.shutdown(deadline: .seconds(2)) }
        let socket = try RawWebSocket(port: port)
        try await eventually("opened") { echo.state.current.opened.count == 1 }
        // Never answer the pings: the server must drop us.
        var sawPing = false
        reading: while true {
            switch try? socket.receiveFrame(timeout: .seconds(10), returnPings: true) {
            case .ping?: sawPing = true
            case .close?, nil: break reading
            default: continue
            }
        }
        #expect(sawPing)
        try await eventually("server closed the idle connection", timeout: .seconds(8)) {
            echo.state.current.closed.count == 1
        }
    }

    // MARK: Scale

    @Test func manyConcurrentClientsAllEcho() async throws {
        let (server, port, echo) = try startServer()
        defer { server.shutdown(deadline: .seconds(3)) }
        let client = try startClient()
        defer { client.shutdown(deadline: .seconds(3)) }

        let count = 250, perClient = 20
        var recorders: [RecordingClient] = []
        for index in 0..<count {
            let recorder = RecordingClient()
            recorder.initialMessages = (0..<perClient).map { "client \(index) message \($0)" }
            try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: recorder)
            recorders.append(recorder)
        }
        try await eventually("all echoes", timeout: .seconds(30)) {
            recorders.allSatisfy { $0.state.current.texts.count == perClient || $0.finished }
        }
        for (index, recorder) in recorders.enumerated() {
            let state = recorder.state.current
            #expect(state.failure == nil)
            #expect(state.texts == (0..<perClient).map { "client \(index) message \($0)" })
        }
        #expect(Set(echo.state.current.opened).count == count)
    }
}

