import Foundation
import Synchronization
import Testing
import TetherNATS
import TetherTestSupport

/// Every suite of this module runs one test at a time: each starts its own nats-server
/// processes, and the 2-core machine is shared.
@Suite(.serialized) enum NATS {}

/// A connection named after the test, to `urls`.
func connect(_ urls: [String], name: String = "test", events: @escaping @Sendable (NATSConnection.Event) -> Void = { _ in }) throws -> NATSConnection {
    var options = NATSConnection.Options(urls: urls, name: name)
    options.reconnectWait = .milliseconds(100)
    return try NATSConnection(options, events: events)
}

/// Collects values from NATS threads for a test to wait on.
final class Collector<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
    var count: Int { values.withLock { $0.count } }

    /// Waits until at least `count` values came (or throws after `timeout`).
    func wait(for count: Int, timeout: Duration = .seconds(10)) async throws -> [Value] {
        let deadline = ContinuousClock.now + timeout
        while self.count < count {
            guard ContinuousClock.now < deadline else { throw WaitTimedOut(description: "waited for \(count) values, have \(self.count)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        return all
    }
}

/// Waits until the servers `publishers` are connected to know every subscription `subscriber`
/// has made so far: a probe subscribed after them answers each publisher's request (servers
/// learn a connection's subscriptions in the order it made them).
func waitForInterest(of subscriber: NATSConnection, at publishers: [NATSConnection]) async throws {
    let probe = "probe." + String(UInt64.random(in: 0...UInt64.max))
    let subscription = try subscriber.subscribe(probe) { try? $0.respond([]) }
    defer { subscription.unsubscribe() }
    let deadline = ContinuousClock.now + .seconds(10)
    for publisher in publishers {
        while true {
            do {
                _ = try await publisher.request(probe, [], timeout: .seconds(1))
                break
            } catch {
                guard case .noResponders = error, ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }
}

struct WaitTimedOut: Error, CustomStringConvertible {
    let description: String
}

extension NATS {
    @Suite struct ConnectionTests {
        @Test func publishAndSubscribeWithHeadersAndQueueGroups() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            // Publisher and subscribers on different servers: the cluster routes between them.
            let publisher = try connect([cluster.servers[0].url], name: "publisher")
            let subscriber = try connect([cluster.servers[1].url], name: "subscriber")
            #expect(publisher.isConnected)
            #expect(publisher.connectedURL == cluster.servers[0].url)

            let received = Collector<NATSMessage>()
            let subscription = try subscriber.subscribe("rooms.>") { received.append($0) }
            let workers = Collector<String>()
            let first = try subscriber.subscribe("work", queueGroup: "workers") { _ in workers.append("first") }
            let second = try subscriber.subscribe("work", queueGroup: "workers") { _ in workers.append("second") }
            try await waitForInterest(of: subscriber, at: [publisher])

            try publisher.publish("rooms.a", Array("plain".utf8))
            try publisher.publish("rooms.b.c", [0, 1, 2, 255], headers: ["Room": "b", "Multi": "1"])
            for _ in 0..<20 { try publisher.publish("work", []) }
            try await publisher.flush()

            let messages = try await received.wait(for: 2)
            #expect(messages.map(\.subject) == ["rooms.a", "rooms.b.c"])
            #expect(messages[0].data == Array("plain".utf8))
            #expect(messages[0].headers.isEmpty)
            #expect(messages[1].data == [0, 1, 2, 255])
            #expect(messages[1].headers["Room"] == "b")
            #expect(messages[1].headers["Multi"] == "1")
            let delivered = try await workers.wait(for: 20)
            #expect(delivered.count == 20, "each queue-group message goes to exactly one member")

            subscription.unsubscribe()
            // A marker published after the message arrives after it would have.
            let markers = Collector<NATSMessage>()
            let marker = try subscriber.subscribe("marker") { markers.append($0) }
            try await waitForInterest(of: subscriber, at: [publisher])
            try publisher.publish("rooms.a", [1])
            try publisher.publish("marker", [])
            _ = try await markers.wait(for: 1)
            #expect(received.count == 2, "nothing after unsubscribe")
            _ = marker
            _ = (first, second)
            publisher.close()
            subscriber.close()
        }

        @Test func requestReplyNoRespondersAndTimeout() async throws {
            let cluster = try NATSCluster(size: 1)
            defer { cluster.stop() }
            let requester = try connect(cluster.urls, name: "requester")
            let responder = try connect(cluster.urls, name: "responder")

            let service = try responder.subscribe("echo") { message in
                var answer = Array("re: ".utf8) + message.data
                if let id = message.headers["Id"] { answer += Array(" #\(id)".utf8) }
                try? message.respond(answer)
            }
            let silent = try responder.subscribe("silent") { _ in }
            try await responder.flush()

            let reply = try await requester.request("echo", Array("hi".utf8), headers: ["Id": "7"], timeout: .seconds(2))
            #expect(String(decoding: reply.data, as: UTF8.self) == "re: hi #7")

            // Many concurrent requests share the one reply inbox; each gets its own answer.
            let answers = Collector<String>()
            for index in 0..<200 {
                requester.request("echo", Array("\(index)".utf8), timeout: .seconds(5)) { result in
                    answers.append((try? String(decoding: result.get().data, as: UTF8.self)) ?? "error")
                }
            }
            let all = try await answers.wait(for: 200)
            #expect(Set(all) == Set((0..<200).map { "re: \($0)" }))

            await #expect(throws: NATSError.noResponders(subject: "nobody")) {
                try await requester.request("nobody", [], timeout: .seconds(2))
            }
            let start = ContinuousClock.now
            await #expect(throws: NATSError.timeout(subject: "silent")) {
                try await requester.request("silent", [], timeout: .milliseconds(300))
            }
            let waited = ContinuousClock.now - start
            #expect(waited >= .milliseconds(290) && waited < .seconds(2), "timed out after \(waited)")
            _ = (service, silent)
        }

        @Test func connectionFailureNamesTheURLs() throws {
            let ports = try freePorts(2)
            let urls = ports.map { "nats://127.0.0.1:\($0)" }
            do {
                _ = try connect(urls)
                Issue.record("connected to nothing")
            } catch let error as NATSError {
                guard case .connectionFailed(let failedURLs, _) = error else { throw error }
                #expect(failedURLs == urls)
                #expect(error.description.contains(urls[0]) && error.description.contains(urls[1]))
            }
        }

        /// A stopped (SIGSTOP) server keeps its sockets open: the client notices by its pings and
        /// moves to another server; the stopped one rejoins after SIGCONT.
        @Test func aPausedServerIsLeftAfterMissedPings() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let events = Collector<NATSConnection.Event>()
            var options = NATSConnection.Options(urls: [cluster.servers[0].url, cluster.servers[1].url], name: "pinger")
            options.pingInterval = .milliseconds(200)
            options.reconnectWait = .milliseconds(100)
            let connection = try NATSConnection(options) { events.append($0) }
            let paused = cluster.servers.first { $0.url == connection.connectedURL }!

            let start = ContinuousClock.now
            cluster.pause(paused)
            _ = try await events.wait(for: 2, timeout: .seconds(10))
            let moved = ContinuousClock.now - start
            guard case .reconnected(let url) = events.all[1] else { Issue.record("events: \(events.all)"); return }
            #expect(events.all[0] == .disconnected)
            #expect(url != paused.url)
            #expect(moved < .seconds(3), "left the stopped server after \(moved)")

            cluster.resume(paused)
            try cluster.waitUntilReady()
            let js = try connection.jetStream()
            _ = try await js.addOrUpdateStream(.init(name: "AFTER", subjects: ["after.>"], replicas: 3))
            #expect(try await js.publish("after.x", [1]) == 1)
        }

        @Test func eventsAndReconnect() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let events = Collector<NATSConnection.Event>()
            let connection = try connect([cluster.servers[0].url, cluster.servers[1].url], name: "events") { events.append($0) }
            let before = try #require(connection.connectedURL)
            let responder = try connect([cluster.servers[2].url], name: "responder")
            let service = try responder.subscribe("ping") { try? $0.respond(Array("pong".utf8)) }
            // A request in flight when the server dies fails at once with `disconnected`.
            let silent = try responder.subscribe("silent") { _ in }
            try await waitForInterest(of: responder, at: [connection])
            let inFlight = Collector<Result<NATSMessage, NATSError>>()
            connection.request("silent", [], timeout: .seconds(30)) { inFlight.append($0) }

            cluster.kill9(cluster.servers.first { $0.url == before }!)
            let outcome = try await inFlight.wait(for: 1)
            guard case .failure(.disconnected) = outcome[0] else { Issue.record("in-flight request: \(outcome[0])"); return }

            _ = try await events.wait(for: 2, timeout: .seconds(10))
            #expect(events.all.first == .disconnected)
            guard case .reconnected(let url) = events.all[1] else { Issue.record("events: \(events.all)"); return }
            #expect(url != before)
            let reply = try await connection.request("ping", [], timeout: .seconds(2))
            #expect(reply.data == Array("pong".utf8))

            let beforeClose = events.count
            connection.close()
            // Closing a connected connection: `disconnected`, then `closed`, the last event.
            let all = try await events.wait(for: beforeClose + 2)
            #expect(Array(all[beforeClose...]) == [.disconnected, .closed])
            await #expect(throws: NATSError.closed) { try await connection.request("ping", [], timeout: .seconds(1)) }
            _ = (service, silent)
        }
    }
}
