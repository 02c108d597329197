import Foundation
import Testing
@testable import TetherTransport
import TetherTestSupport

/// A server of several socket shards: one port, each shard's connections on its own thread and
/// delegate, limits counted across shards, and nothing left behind on shutdown.
@Suite("Socket shards", .serialized, .timeLimit(.minutes(3)))
struct ShardTests {
    private func startShards(_ count: Int, _ configure: (inout WebSocketServerConfiguration) -> Void = { _ in })
        throws -> (server: WebSocketServer, port: Int, delegates: [EchoServer]) {
        var configuration = WebSocketServerConfiguration()
        configuration.port = 0
        configuration.ioThreads = count
        configure(&configuration)
        let server = WebSocketServer(configuration: configuration)
        let delegates = (0..<count).map { _ in EchoServer() }
        let port = try server.start(delegates: delegates)
        return (server, port, delegates)
    }

    /// Connects `count` clients that each send `messages` and waits for every echo; they stay
    /// connected until `client` shuts down.
    private func echo(_ count: Int, url: String, trust: TLSTrust = .system, messages: [String]) async throws -> (client: WebSocketClient, recorders: [RecordingClient]) {
        let client = try startClient { $0.trust = trust }
        var recorders: [RecordingClient] = []
        for _ in 0..<count {
            let recorder = RecordingClient()
            recorder.initialMessages = messages
            try client.connect(url: url, delegate: recorder)
            recorders.append(recorder)
        }
        try await eventually("every echo") { recorders.allSatisfy { $0.state.current.texts.count >= messages.count || $0.finished } }
        return (client, recorders)
    }

    func sharesOnePort(secure: Bool) async throws {
        let certificate = secure ? try TestCertificate() : nil
        defer { certificate?.remove() }
        let (server, port, delegates) = try startShards(3) { configuration in
            if let certificate { configuration.tls = TLSFiles(certificatePath: certificate.certificate, privateKeyPath: certificate.key) }
        }
        defer { server.shutdown(deadline: .seconds(2)) }
        let messages = (0..<50).map { "message \($0) " + String(repeating: "x", count: $0 * 40) }
        let (client, recorders) = try await echo(6, url: "\(secure ? "wss" : "ws")://127.0.0.1:\(port)/", trust: secure ? .insecure : .system, messages: messages)
        defer { client.shutdown() }

        for recorder in recorders {
            #expect(recorder.state.current.failure == nil)
            #expect(recorder.state.current.texts == messages)
        }
        // Handed out in turn: two connections per shard, each shard's callbacks on one thread of
        // its own, and the figures say so.
        #expect(delegates.map { $0.state.current.opened.count } == [2, 2, 2])
        let threads = delegates.map(\.state.current.callbackThreads)
        #expect(threads.allSatisfy { $0.count == 1 })
        #expect(Set(threads.flatMap { $0 }).count == 3)
        #expect(server.shardStatistics.map(\.connections) == [2, 2, 2])
        #expect(Set(delegates.flatMap(\.state.current.opened)).count == 6, "connection ids are unique across shards")
    }

    @Test func shardsShareOnePortAndSplitTheConnections() async throws {
        try await sharesOnePort(secure: false)
    }

    @Test func shardsServeTLS() async throws {
        try await sharesOnePort(secure: true)
    }

    @Test func theConnectionLimitCountsEveryShard() async throws {
        let (server, port, delegates) = try startShards(2) { $0.maxConnections = 3 }
        defer { server.shutdown(deadline: .seconds(2)) }
        let client = try startClient()
        defer { client.shutdown() }
        var recorders: [RecordingClient] = []
        for _ in 0..<5 {
            let recorder = RecordingClient()
            try client.connect(url: "ws://127.0.0.1:\(port)/", delegate: recorder)
            recorders.append(recorder)
            try await eventually("connected or refused") { recorder.connected || recorder.finished }
        }
        #expect(recorders.filter(\.connected).count == 3)
        #expect(delegates.reduce(0) { $0 + $1.state.current.opened.count } == 3)
    }

    @Test func shutdownStopsEveryShardAndTheAcceptor() async throws {
        let (server, port, _) = try startShards(2)
        let (client, recorders) = try await echo(2, url: "ws://127.0.0.1:\(port)/", messages: ["hello"])
        defer { client.shutdown() }
        #expect(recorders.allSatisfy { $0.state.current.texts == ["hello"] })
        #expect(threadNames().filter { $0.hasPrefix("tether-io-") || $0 == "tether-accept" }.count == 3)
        server.shutdown(deadline: .seconds(2))
        #expect(threadNames().filter { $0.hasPrefix("tether-io-") || $0 == "tether-accept" }.isEmpty)
        // The port is closed: nothing accepts any more.
        let (lateClient, late) = try await echo(1, url: "ws://127.0.0.1:\(port)/", messages: ["late"])
        defer { lateClient.shutdown() }
        #expect(late[0].state.current.failure != nil)
    }

    /// This process's thread names.
    private func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
    }
}
