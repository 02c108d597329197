import Testing
import TetherClient
import TetherJSON
import TetherProtocol
import TetherTestSupport

/// A failed request says whether it was applied: `.no` (safe to send again) or `.unknown`.
@Suite("Client errors say whether the action was applied", .serialized)
@MainActor
struct AppliedTests {
    nonisolated static let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#

    /// Answers action `refuse` with applied false, `lose` with applied "unknown", `old` without
    /// the member (a server older than it), and leaves any other action unanswered.
    nonisolated static func server() throws -> ScriptedServer {
        try ScriptedServer(greeting: [hello]) { text in
            guard let request = try? JSONParser().parse(text), request["type"] == "action", let id = request["id"]?.intValue else { return [] }
            let error = #"{"type":"error","code":"unavailable","message":"m","id":\#(id),"room":"r""#
            switch request["name"]?.stringValue {
            case "refuse": return [error + #","applied":false}"#]
            case "lose": return [error + #","applied":"unknown"}"#]
            case "old": return [error + "}"]
            default: return []
            }
        }
    }

    func connect(_ server: ScriptedServer, timeout: Duration = .seconds(5)) async throws -> TetherClient {
        var options = ClientOptions(url: server.url)
        options.reconnect.isEnabled = false
        options.actionTimeout = timeout
        let client = TetherClient(options: options)
        try client.connect()
        try await client.waitUntilConnected()
        return client
    }

    /// The error `send` throws.
    func failure(_ client: TetherClient, _ action: String) async throws -> TetherClientError {
        do {
            try await client.send(action, to: "r")
        } catch let error as TetherClientError {
            return error
        }
        throw TestFailure("\(action) was acknowledged")
    }

    @Test func theServersAppliedReachesTheCaller() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = try await connect(server)
        let refused = try await failure(client, "refuse")
        #expect(refused.applied == .no)
        guard case .server(let error) = refused else { throw TestFailure("refuse: \(refused)") }
        #expect(error.code == .unavailable && error.applied == .no)
        #expect(!refused.description.contains("may or may not"), "\(refused)")

        #expect(try await failure(client, "lose").applied == .unknown)
        #expect(try await failure(client, "old").applied == .unknown, "a server that does not say is taken as not knowing")
        await client.close()
    }

    @Test func unansweredIsUnknown() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = try await connect(server, timeout: .milliseconds(200))
        let error = try await failure(client, "ignore")
        #expect(error == .timedOut && error.applied == .unknown)
        await client.close()
    }

    @Test func aDropAfterSendingIsUnknownAndSendingWhileDisconnectedIsNotApplied() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = try await connect(server)
        let sent = Task { try await failure(client, "ignore") }
        try await eventually("the action reaches the server") { server.received.contains { $0.contains(#""name":"ignore""#) } }
        server.dropAll()
        let dropped = try await sent.value
        guard case .disconnected = dropped else { throw TestFailure("dropped: \(dropped)") }
        #expect(dropped.applied == .unknown)

        // Reconnecting is off: the client stays closed, and a send goes nowhere.
        let notSent = try await failure(client, "refuse")
        guard case .notConnected = notSent else { throw TestFailure("not sent: \(notSent)") }
        #expect(notSent.applied == .no)
        #expect(!server.received.contains { $0.contains(#""name":"refuse""#) })
        await client.close()
    }

    @Test func closingWhileWaitingIsUnknown() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = try await connect(server)
        let sent = Task { try await failure(client, "ignore") }
        try await eventually("the action reaches the server") { server.received.contains { $0.contains(#""name":"ignore""#) } }
        await client.close()
        let closed = try await sent.value
        #expect(closed == .closed && closed.applied == .unknown)
    }
}
