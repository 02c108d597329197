import Foundation
import Testing
import TetherDemos
import TetherJSON
import TetherTestSupport
import TetherTesting

/// A room's history on a real cluster: every version in the log says who made it and on which
/// node, through the owner's `kill -9`, and any node answers.
@Suite("End to end: a room's history on a cluster", .serialized, .timeLimit(.minutes(4)))
@MainActor
struct ClusterHistoryTests {
    func act(_ cluster: ClusterFixture, on node: String, _ range: ClosedRange<Int>) throws {
        for index in range {
            let answer = try HTTPAPITests.curl("http://127.0.0.1:\(cluster.node(node).port)", "POST", "/rooms/counter%3Ahistory/actions/increment",
                                               body: #"{"by": \#(index)}"#, headers: ["Tether-Client: history-\(node)", "Idempotency-Key: \(index)"])
            #expect(answer.status == 200, "\(answer)")
        }
    }

    @Test func everyVersionNamesItsActionClientAndNodeAcrossAFailover() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        try act(cluster, on: "n1", 1...5)
        let first = try #require(cluster.owner(of: "counter:history"))
        cluster.node(first).kill9()
        let other = try #require(["n1", "n2", "n3"].first { $0 != first })
        try await eventually("a new owner takes actions", timeout: .seconds(30)) {
            (try? HTTPAPITests.curl("http://127.0.0.1:\(cluster.node(other).port)", "POST", "/rooms/counter%3Ahistory/actions/increment",
                                    body: #"{"by": 6}"#, headers: ["Tether-Client: history-\(other)", "Idempotency-Key: 6"]).status) == 200
        }
        try act(cluster, on: other, 7...8)
        let second = try #require(cluster.owner(of: "counter:history"))
        let reader = try #require(["n1", "n2", "n3"].first { $0 != first && cluster.nodes[$0]?.isRunning == true })
        let answer = try HTTPAPITests.curl("http://127.0.0.1:\(cluster.node(reader).port)", "GET", "/rooms/counter%3Ahistory/history?limit=50")
        #expect(answer.status == 200, "\(answer)")
        let steps = try #require(answer.json?["steps"]?.arrayValue)
        #expect(steps.map { $0["version"]?.intValue } == Array((1...8).reversed()), "every version, newest first: \(steps)")
        #expect(steps.allSatisfy { $0["cause"] == "action" && $0["action"] == "increment" && $0["ops"] == 1 && $0["paths"] == ["/count"] })
        #expect(steps.map { $0["seq"]?.intValue } == [8, 7, 6, 5, 4, 3, 2, 1], "each numbered action's number")
        #expect(steps.suffix(5).allSatisfy { $0["node"]?.stringValue == first }, "the first owner made versions 1 to 5: \(steps)")
        #expect(steps.prefix(3).allSatisfy { $0["node"]?.stringValue == second }, "the new owner the rest")
        #expect(Set(steps.compactMap { $0["argsDigest"]?.stringValue }).count == 8, "different arguments, different digests")
        let filtered = try HTTPAPITests.curl("http://127.0.0.1:\(cluster.node(reader).port)", "GET", "/rooms/counter%3Ahistory/history?limit=2&before=5")
        #expect(filtered.json?["steps"]?.arrayValue?.map { $0["version"]?.intValue } == [4, 3], "\(filtered)")

        // The state at every version, rebuilt from the log on any node: version V counted 1 + ... + V.
        for version in 0...8 {
            let state = try HTTPAPITests.curl("http://127.0.0.1:\(cluster.node(reader).port)", "GET", "/rooms/counter%3Ahistory/state?at=\(version)")
            #expect(state.status == 200 && state.json?["state"]?["count"]?.intValue == (0...version).reduce(0, +), "v\(version): \(state)")
        }
        let future = try HTTPAPITests.curl("http://127.0.0.1:\(cluster.node(reader).port)", "GET", "/rooms/counter%3Ahistory/state?at=9")
        #expect(future.status == 410, "\(future)")

        // A fork at version 5 (made before the failover), on one node; read and acted on on others.
        let live = ["n1", "n2", "n3"].filter { cluster.nodes[$0]?.isRunning == true }
        let url = { (node: String) in "http://127.0.0.1:\(cluster.node(node).port)" }
        let fork = try HTTPAPITests.curl(url(live[0]), "POST", "/rooms/counter%3Ahistory/fork?at=5&to=counter%3Ahistory-fork")
        #expect(fork.status == 201 && fork.json?["room"] == "counter:history-fork", "\(fork)")
        let listed = try HTTPAPITests.curl(url(live[1]), "GET", "/rooms")
        let listedFork = listed.json?["rooms"]?.arrayValue?.first { $0["name"] == "counter:history-fork" }
        #expect(listedFork?["version"] == 0, "listed before any node loads it: \(listed)")
        let forked = try HTTPAPITests.curl(url(live[1]), "GET", "/rooms/counter%3Ahistory-fork/state?at=0")
        #expect(forked.json?["state"]?["count"] == 15, "the state at version 5: \(forked)")
        try await eventually("the fork takes actions", timeout: .seconds(30)) {
            (try? HTTPAPITests.curl(url(live[1]), "POST", "/rooms/counter%3Ahistory-fork/actions/increment", body: #"{"by": 100}"#).status) == 200
        }
        let read = try HTTPAPITests.curl(url(live[0]), "GET", "/rooms/counter%3Ahistory-fork")
        #expect(read.json?["state"]?["count"] == 115 && read.json?["version"] == 1, "\(read)")
        let again = try HTTPAPITests.curl(url(live[1]), "POST", "/rooms/counter%3Ahistory/fork?at=5&to=counter%3Ahistory-fork")
        #expect(again.status == 409, "\(again)")
        let original = try HTTPAPITests.curl(url(live[1]), "GET", "/rooms/counter%3Ahistory")
        #expect(original.json?["state"]?["count"] == 36 && original.json?["version"] == 8, "the room itself is untouched: \(original)")
    }

    /// A to-do list acted on through two nodes, exported from a third and replayed as a test.
    /// More steps than the log keeps (2,000 entries per room): the epoch's start has left it, and
    /// the versions from its oldest checkpoint (one every 500 versions) on still rebuild.
    @Test func versionsRebuildFromACheckpointOnceTheStartHasLeftTheLog() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        let socket = try RawWebSocket(port: cluster.node("n1").port)
        _ = try socket.receiveJSON()  // hello
        try socket.send(json: ["type": "join", "room": "counter:checkpoints"])
        _ = try socket.receiveJSON(until: { $0["type"] == "snapshot" })
        // One action at a time, so that each version is an entry of its own.
        for id in 1...2_120 {
            try socket.send(json: ["type": "action", "room": "counter:checkpoints", "name": "increment", "id": .int(id)])
            let answer = try socket.receiveJSON(timeout: .seconds(10), until: { $0["id"] == .int(id) })
            guard answer["type"] == "ack" else { return #expect(answer["type"] == "ack", "action \(id): \(answer)") }
        }
        let url = "http://127.0.0.1:\(cluster.node("n3").port)"
        for version in [500, 1_234, 2_000, 2_050, 2_120] {
            let state = try HTTPAPITests.curl(url, "GET", "/rooms/counter%3Acheckpoints/state?at=\(version)")
            #expect(state.status == 200 && state.json?["state"]?["count"]?.intValue == version, "v\(version): \(state)")
        }
        let beforeCheckpoints = try HTTPAPITests.curl(url, "GET", "/rooms/counter%3Acheckpoints/state?at=499")
        #expect(beforeCheckpoints.status == 410 && beforeCheckpoints.body.contains("rebuilt from version 500 to 2120"), "\(beforeCheckpoints)")
        let history = try HTTPAPITests.curl(url, "GET", "/rooms/counter%3Acheckpoints/history?limit=1000")
        #expect(history.json?["steps"]?.arrayValue?.first?["version"] == 2_120, "a checkpoint is no step: \(history.status)")
    }

    @Test func anExportFromAnyNodeReplaysAsTheRoomRan() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        let url = { (node: String) in "http://127.0.0.1:\(cluster.node(node).port)" }
        let actions: [(String, String, String)] = [("n1", "add", #"{"title": "milk"}"#), ("n2", "add", #"{"title": "bread"}"#),
                                                   ("n1", "remove", #"{"id": "t1"}"#), ("n2", "add", #"{"title": "eggs"}"#)]
        for (index, (node, action, body)) in actions.enumerated() {
            let answer = try HTTPAPITests.curl(url(node), "POST", "/rooms/todo%3Acluster-replay/actions/\(action)", body: body,
                                               headers: ["Tether-Client: replay-\(node)", "Idempotency-Key: \(index + 1)"])
            #expect(answer.status == 200, "\(answer)")
        }
        let exported = try HTTPAPITests.curl(url("n3"), "GET", "/rooms/todo%3Acluster-replay/export?from=0")
        #expect(exported.status == 200, "\(exported)")
        let export = try RoomExport(json: try #require(exported.json))
        #expect(export.steps.map { $0["action"]?.stringValue } == ["add", "add", "remove", "add"], "\(export.steps)")
        #expect(try RoomReplay.run(Todo.self, export) == .reproduced(steps: 4))
        let counter = try HTTPAPITests.curl(url("n3"), "GET", "/rooms/counter/export?from=0")
        #expect(counter.status == 404 || counter.status == 409, "\(counter)")
    }
}
