import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport
import TetherTransport

#if canImport(Glibc)
import Glibc
#endif

/// Room discovery (`describe`), resuming from a given point, and the words a failed connection
/// is reported in.
@Suite("Client discovery, since and connection errors", .serialized)
@MainActor
struct DiscoveryAndErrorTests {
    nonisolated static let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#
    nonisolated static let todo = #"{"name":"todo","scope":"shared","actions":[{"name":"add","args":{"title":{"type":"string"}}},{"name":"clearCompleted","args":{}},{"name":"rename","args":{"id":{"type":"string"},"title":{"type":"string"}}}]}"#
    nonisolated static let counter = #"{"name":"counter","scope":"shared","actions":[{"name":"increment","args":{"by":{"type":"integer","optional":true}}}]}"#

    /// A scripted server that answers `describe` as the protocol says.
    nonisolated static func describingServer() throws -> ScriptedServer {
        try ScriptedServer(greeting: [hello]) { text in
            guard let request = try? JSONParser().parse(text), request["type"] == "describe", let id = request["id"]?.intValue else { return [] }
            switch request["kind"]?.stringValue {
            case nil: return [#"{"type":"description","id":\#(id),"kinds":[\#(counter),\#(todo)]}"#]
            case "todo": return [#"{"type":"description","id":\#(id),"kinds":[\#(todo)]}"#]
            case let kind?: return [#"{"type":"error","code":"unknown_room","message":"no room kind \"\#(kind)\"; kinds are counter, todo","id":\#(id),"applied":false}"#]
            }
        }
    }

    func connect(_ url: String) async throws -> TetherClient {
        var options = ClientOptions(url: url)
        options.reconnect.isEnabled = false
        options.actionTimeout = .seconds(5)
        let client = TetherClient(options: options)
        try client.connect()
        try await client.waitUntilConnected()
        return client
    }

    @Test func describeListsKindsActionsAndArgumentTypes() async throws {
        let server = try Self.describingServer()
        defer { server.stop() }
        let client = try await connect(server.url)
        let all = try await client.describe()
        #expect(all.map(\.name) == ["counter", "todo"])
        let increment = try #require(all.first?.actions.first)
        #expect(increment.signature == "increment by: integer?")
        #expect(increment.argumentTemplate == #"{"by": 0}"#)

        let todo = try await client.describe(kind: "todo")
        #expect(todo.count == 1 && todo[0].scope == "shared")
        #expect(todo[0].actions.map(\.signature) == ["add title: string", "clearCompleted", "rename id: string title: string"])
        #expect(todo[0].actions[2].argumentTemplate == #"{"id": "", "title": ""}"#)

        await #expect(throws: TetherClientError.self) { try await client.describe(kind: "nope") }
        do {
            _ = try await client.describe(kind: "nope")
        } catch TetherClientError.server(let error) {
            #expect(error.code == .unknownRoom && error.message.contains("kinds are counter, todo"))
        }
        await client.close()
    }

    @Test func aServerWithoutDescribeAnswersWithAnError() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await connect(daemon.url)
        do {
            let kinds = try await client.describe()
            #expect(kinds.contains { $0.name == "counter" }, "a daemon that knows describe lists counter")
        } catch TetherClientError.server(let error) {
            #expect(error.code == .badMessage, "an older daemon: \(error)")
        }
        await client.close()
    }

    @Test func aMirrorCreatedWithSinceFollowsPatchesWithoutAState() async throws {
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            guard text.contains(#""type":"join""#) else { return [] }
            // Resumed: the patches after version 4 of epoch E.
            return text.contains(#""since":{"epoch":"E","version":4}"#)
                ? [#"{"type":"patch","room":"r","epoch":"E","from":4,"version":6,"ops":[{"op":"replace","path":"/count","value":6}]}"#]
                : [#"{"type":"snapshot","room":"r","epoch":"E","version":6,"state":{"count":6}}"#]
        }
        defer { server.stop() }
        let client = try await connect(server.url)
        let room = client.room("r", since: .init(epoch: "E", version: 4))
        try await eventually("the resumed patch") { room.version == 6 }
        #expect(!room.hasState && room.epoch == "E")
        #expect(server.received.filter { $0.contains(#""type":"join""#) }.count == 1, "no rejoin for a snapshot")
        await client.close()
    }

    // MARK: Connection errors

    /// The reason the client gives for not reaching `url` (reconnecting off).
    func failure(_ url: String, trust: TLSTrust = .system) async throws -> String {
        var options = ClientOptions(url: url)
        options.reconnect.isEnabled = false
        options.trust = trust
        let client = TetherClient(options: options)
        try client.connect()
        do {
            try await client.waitUntilConnected()
        } catch TetherClientError.notConnected(let reason) {
            return reason
        }
        await client.close()
        throw TestFailure("\(url) connected")
    }

    @Test func wssToAPlainServerSaysTryWs() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let reason = try await failure("wss://127.0.0.1:\(daemon.port)", trust: .insecure)
        #expect(reason == "cannot connect to wss://127.0.0.1:\(daemon.port): the TLS handshake with 127.0.0.1:\(daemon.port) failed: the server probably does not use TLS (a plain ws:// server); try ws://127.0.0.1:\(daemon.port)/", "\(reason)")
    }

    @Test func aBadHostNameIsNamed() async throws {
        let reason = try await failure("ws://no-such-host.invalid:8080")
        #expect(reason.hasPrefix("cannot connect to ws://no-such-host.invalid:8080: cannot resolve the host name \"no-such-host.invalid\" ("), "\(reason)")
        #expect(reason.hasSuffix("); check the host in the URL"))
    }

    @Test func nothingListeningSaysCheckTheServer() async throws {
        let port = try freePort()
        let reason = try await failure("ws://127.0.0.1:\(port)")
        #expect(reason == "cannot connect to ws://127.0.0.1:\(port): nothing answers at 127.0.0.1:\(port) (connection refused or host unreachable); check that the server is running and the host and port in the URL")
    }

    @Test func anHTTPErrorInsteadOfTheUpgradeSaysWhy() async throws {
        let server = try HTTPRefusal(status: "400 Bad Request")
        defer { server.stop() }
        let reason = try await failure("ws://127.0.0.1:\(server.port)")
        #expect(reason == "cannot connect to ws://127.0.0.1:\(server.port): 127.0.0.1:\(server.port) answered HTTP 400 instead of accepting the WebSocket connection: it is not a Tether server, or it does not speak the client's protocol (tether.v1); check the URL and the server's version", "\(reason)")
    }

    @Test func aServerThatDropsTheHandshakeSuggestsWss() async throws {
        // A server of another subprotocol: lws drops the connection without an HTTP answer, as a
        // TLS server does to plain HTTP.
        var configuration = WebSocketServerConfiguration()
        configuration.port = 0
        configuration.subprotocol = "other.v9"
        let server = WebSocketServer(configuration: configuration)
        let port = try server.start(delegate: SilentServer())
        defer { server.shutdown(deadline: .seconds(1)) }
        let reason = try await failure("ws://127.0.0.1:\(port)")
        #expect(reason.contains("if the server uses TLS, try wss://127.0.0.1:\(port)/") || reason.contains("answered HTTP"), "\(reason)")
    }
}

private final class SilentServer: WebSocketServerDelegate, @unchecked Sendable {
    func connectionOpened(_ connection: WebSocketConnection) {}
    func connectionClosed(_ connection: WebSocketConnection) {}
    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) {}
    func connectionWritable(_ connection: WebSocketConnection) {}
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A TCP server on 127.0.0.1 that answers every request with one HTTP status and closes, as a
/// server refusing a WebSocket upgrade does.
final class HTTPRefusal: @unchecked Sendable {
    let port: Int
    private let socket: Int32
    private let thread: Thread

    init(status: String) throws {
        let listener = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        socket = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 8) == 0 else { throw TestFailure("cannot listen: \(errno)") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        let response = Array("HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        thread = Thread {
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = read(client, &buffer, buffer.count)
                _ = response.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                close(client)
            }
        }
        thread.start()
    }

    func stop() {
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }
}
