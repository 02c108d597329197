import Synchronization
import Testing
import TetherClient
import TetherJSON
import TetherProtocol
import TetherTestSupport

/// An action runs once and `send` returns its real outcome (docs/CLIENTS.md, "Actions"):
/// numbered, queued while not connected, sent again under its number after a drop or an answer
/// that settles nothing, at most 64 in flight. Against a scripted server that keeps the numbers
/// it saw, as a room does.
@Suite("Actions are numbered, queued, resent and answered once", .serialized, .timeLimit(.minutes(1)))
@MainActor
struct AppliedTests {
    nonisolated static let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#

    /// A numbered-action server: the first send of `refuse` gets `unavailable` (applied false);
    /// `lose` gets "unknown" the first time and the ack after; `quiet` and `hold` go unanswered
    /// the first time (`quiet` is acked when sent again; `hold` never, answered by the test);
    /// `busy` is unanswered, then `unavailable`, then acked. Any other action is acked.
    /// Versions count the numbers acked, once each.
    final class NumberedServer: Sendable {
        let scripted: ScriptedServer
        /// Sends per number, the version each acked number got, the last version.
        final class Seen: Sendable {
            let state = Mutex<(sends: [Int: Int], versions: [Int: Int], version: Int)>(([:], [:], 0))
        }
        private let seen = Seen()

        init() throws {
            let seen = self.seen
            scripted = try ScriptedServer(greeting: [AppliedTests.hello]) { text in
                guard let request = try? JSONParser().parse(text), request["type"] == "action", let id = request["id"]?.intValue,
                      let seq = request["seq"]?.intValue, let name = request["name"]?.stringValue else { return [] }
                return seen.state.withLock { seen in
                    seen.sends[seq, default: 0] += 1
                    let sends = seen.sends[seq]!
                    func ack() -> [String] {
                        if seen.versions[seq] == nil { seen.version += 1; seen.versions[seq] = seen.version }
                        return [#"{"type":"ack","id":\#(id),"room":"r","version":\#(seen.versions[seq]!)}"#]
                    }
                    let unavailable = #"{"type":"error","code":"unavailable","message":"m","id":\#(id),"room":"r","applied":false}"#
                    switch name {
                    case "refuse": return [unavailable]
                    case "lose" where sends == 1: return [#"{"type":"error","code":"unavailable","message":"m","id":\#(id),"room":"r","applied":"unknown"}"#]
                    case "hold": return []
                    case "quiet" where sends == 1, "busy" where sends == 1: return []
                    case "busy" where sends == 2: return [unavailable]
                    default: return ack()
                    }
                }
            }
        }

        /// The action frames received, in order, as (name, seq, id).
        var actions: [(name: String, seq: Int, id: Int)] {
            scripted.received.compactMap { text in
                guard let frame = try? JSONParser().parse(text), frame["type"] == "action" else { return nil }
                return (frame["name"]?.stringValue ?? "", frame["seq"]?.intValue ?? -1, frame["id"]?.intValue ?? -1)
            }
        }

        func sends(ofSeq seq: Int) -> Int { seen.state.withLock { $0.sends[seq] ?? 0 } }
    }

    func client(_ server: NumberedServer, configure: (inout ClientOptions) -> Void = { _ in }) -> TetherClient {
        var options = ClientOptions(url: server.scripted.url)
        options.reconnect.initialDelay = .milliseconds(20)
        options.reconnect.maximumDelay = .milliseconds(100)
        configure(&options)
        return TetherClient(options: options)
    }

    /// The error `send` throws.
    func failure(_ client: TetherClient, _ action: String, timeout: Duration? = nil) async throws -> TetherClientError {
        do {
            try await client.send(action, to: "r", timeout: timeout)
        } catch let error as TetherClientError {
            return error
        }
        throw TestFailure("\(action) was acknowledged")
    }

    @Test func aRefusalSettlesTheActionAndUnknownIsSentAgainUntilKnown() async throws {
        let server = try NumberedServer()
        defer { server.scripted.stop() }
        let client = client(server)
        try client.connect()
        let refused = try await failure(client, "refuse")
        guard case .server(let error) = refused else { throw TestFailure("refuse: \(refused)") }
        #expect(error.code == .unavailable && refused.applied == .no)
        #expect(server.sends(ofSeq: 1) == 1, "a first send answered unavailable is settled: not applied")

        let version = try await client.send("lose", to: "r")
        #expect(version == 1)
        let loses = server.actions.filter { $0.name == "lose" }
        #expect(loses.count == 2 && loses.allSatisfy { $0.seq == 2 }, "\(loses)")
        #expect(client.pendingActions.value.isEmpty)
        await client.close()
    }

    @Test func anActionSentBeforeTheHelloWaitsAndGoesAfterIt() async throws {
        let server = try NumberedServer()
        defer { server.scripted.stop() }
        let client = client(server)
        try client.connect()
        let sent = Task { try await client.send("increment", to: "r") }  // not connected yet: queued
        #expect(try await sent.value == 1)
        let received = server.scripted.received
        let helloIndex = try #require(received.firstIndex { $0.contains(#""type":"hello""#) })
        let actionIndex = try #require(received.firstIndex { $0.contains(#""type":"action""#) })
        #expect(helloIndex < actionIndex, "\(received)")
        await client.close()
    }

    @Test func aDropAfterSendingSendsItAgainUnderItsNumberAndItIsAnsweredOnce() async throws {
        let server = try NumberedServer()
        defer { server.scripted.stop() }
        let client = client(server)
        try client.connect()
        try await client.waitUntilConnected()
        let sent = Task { try await client.send("quiet", to: "r") }
        try await eventually("the action reaches the server") { server.actions.count == 1 }
        #expect(client.pendingActions.value.first?.isSent == true)
        server.scripted.dropAll()
        try await eventually("the action is answered") { client.pendingActions.value.isEmpty }
        #expect(try await sent.value == 1)
        let quiet = server.actions
        #expect(quiet.count == 2 && quiet.allSatisfy { $0.seq == 1 }, "\(quiet)")
        #expect(server.scripted.connectionCount == 2)

        // Unanswered, then "unavailable" (which speaks of that send only), then acked.
        let busy = Task { try await client.send("busy", to: "r") }
        try await eventually("busy reaches the server") { server.actions.count == 3 }
        server.scripted.dropAll()
        try await eventually("busy is answered") { client.pendingActions.value.isEmpty }
        #expect(try await busy.value == 2)
        #expect(server.sends(ofSeq: 2) == 3)
        await client.close()
    }

    @Test func atMost64AreInFlightAndTheRestWaitInOrder() async throws {
        let server = try NumberedServer()
        defer { server.scripted.stop() }
        let client = client(server)
        try client.connect()
        try await client.waitUntilConnected()
        var tasks: [Task<Int, any Error>] = []
        for _ in 0..<65 { tasks.append(Task { try await client.send("hold", to: "r") }) }
        try await eventually("64 actions in flight") { server.actions.count == 64 }
        #expect(server.actions.map(\.seq) == Array(1...64))
        #expect(client.pendingActions.value.count == 65)
        #expect(client.pendingActions.value.filter(\.isSent).count == 64)
        // The oldest answered: the window moves and number 65 goes.
        let first = try #require(server.actions.first)
        server.scripted.broadcast([#"{"type":"ack","id":\#(first.id),"room":"r","version":7}"#])
        #expect(try await tasks[0].value == 7)
        try await eventually("number 65 is sent") { server.actions.count == 65 }
        #expect(server.actions.last?.seq == 65)
        await client.close()
        for task in tasks.dropFirst() {
            do {
                _ = try await task.value
                Issue.record("an unanswered action was acknowledged")
            } catch let error as TetherClientError {
                #expect(error == .closed && error.applied == .unknown, "sent and unanswered at close: \(error)")
            }
        }
    }

    @Test func closingFailsQueuedActionsAsNotSentAndSentOnesAsUnknown() async throws {
        let server = try NumberedServer()
        defer { server.scripted.stop() }
        let client = client(server) { $0.maxQueuedActions = 2 }
        try client.connect()
        try await client.waitUntilConnected()
        let sent = Task { try await failure(client, "hold") }
        try await eventually("the action reaches the server") { server.actions.count == 1 }
        server.scripted.stop()  // nobody answers any more; the second waits in the queue
        try await eventually("the client knows it is disconnected") { !client.connectionState.value.isConnected }
        let queued = Task { try await failure(client, "increment") }
        try await eventually("two actions wait") { client.pendingActions.value.count == 2 }
        let full = try await failure(client, "increment")
        #expect(full == .queueFull(limit: 2) && full.applied == .no)
        await client.close()
        let closed = try await sent.value
        #expect(closed == .closed && closed.applied == .unknown)
        let notSent = try await queued.value
        guard case .notSent = notSent else { throw TestFailure("queued at close: \(notSent)") }
        #expect(notSent.applied == .no)
    }

    @Test func anActionNotSentInItsTimeFailsAsNotSent() async throws {
        var options = ClientOptions(url: "ws://127.0.0.1:\(try freePort())")
        options.reconnect.initialDelay = .milliseconds(20)
        let client = TetherClient(options: options)
        try client.connect()
        let sent = Task { try await failure(client, "increment", timeout: .milliseconds(300)) }
        try await eventually("the action waits, unsent") {
            client.pendingActions.value.map { "\($0.name) \($0.seq) \($0.isSent)" } == ["increment 1 false"]
        }
        let error = try await sent.value
        guard case .notSent(let reason) = error else { throw TestFailure("\(error)") }
        #expect(error.applied == .no)
        #expect(reason.contains("not connected within"), "\(reason)")
        #expect(client.pendingActions.value.isEmpty)
        await client.close()
    }
}
