import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport

/// What a cluster node says about itself and the cluster: its storage is JetStream's (not an
/// SQLite file), a killed node is listed as down (a node that shuts down is not), the room list
/// includes rooms that only the cluster's snapshots hold, and deleting is refused with a reason.
@Suite("End to end: a cluster node's own view", .serialized, .timeLimit(.minutes(3)))
@MainActor
struct ClusterAdminTests {
    @Test func storageNodesAndRoomsAreWhatIsTrueOnTheCluster() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        let client = try await cluster.client(at: "n1")
        // Past the snapshot interval (100 versions): the room is in the snapshots bucket.
        for i in 0..<105 { _ = try await client.send("set", to: "bench:big", args: ["key": "k", "value": .int(i)]) }
        _ = try await client.send("increment", to: "counter:small")

        // The overview's storage facts: JetStream's streams and replicas, no file, no size.
        let watcher = client.room("tether.server")
        try await eventually("the overview") { watcher.isSynced }
        let server = watcher.state["server"]
        #expect(server?["storage"] == ["kind": "jetstream", "streams": 4, "replicas": 3])
        #expect(server?["durability"] == "jetstream")

        // The room list of a node that never held bench:big has it from the snapshots bucket.
        let listing = try JSON(parsing: String(decoding: try RawSocket(port: cluster.node("n2").port).httpGET("/rooms").body, as: UTF8.self))
        let big = try #require(listing["rooms"]?.arrayValue?.first { $0["name"] == "bench:big" }, "\(listing)")
        #expect((big["version"]?.intValue ?? 0) >= 100 && big["kind"] == "bench")
        #expect(listing["node"] == "n2")
        // A room in a node's memory gives its size and last change (`tether rooms` showed "-").
        let own = try JSON(parsing: String(decoding: try RawSocket(port: cluster.node("n1").port).httpGET("/rooms").body, as: UTF8.self))
        let small = try #require(own["rooms"]?.arrayValue?.first { $0["name"] == "counter:small" }, "\(own)")
        #expect(small["inMemory"] == true && (small["bytes"]?.intValue ?? 0) > 0 && (small["lastChange"]?.intValue ?? 0) > 0, "\(small)")

        // Deleting is refused on a cluster, saying why.
        let refused = try RawSocket(port: cluster.node("n1").port).http("DELETE /rooms/counter%3Asmall HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(refused.status == 501)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("not supported on a cluster yet"))

        // A killed node is listed as down, since its last heartbeat; a node that shuts down is not listed.
        let killedAt = Int(Date().timeIntervalSince1970)
        cluster.node("n3").kill9()
        #expect(cluster.node("n2").stop() == 0)
        try await eventually("n3 listed as down on n1", timeout: .seconds(20)) {
            let nodes = try JSON(parsing: try cluster.node("n1").httpGET("/cluster").body)["nodes"]?.arrayValue ?? []
            return nodes.compactMap { $0["name"]?.stringValue } == ["n1", "n3"] && nodes.last?["alive"] == false
        }
        let down = try #require(try JSON(parsing: try cluster.node("n1").httpGET("/cluster").body)["nodes"]?.arrayValue?.last)
        #expect(((killedAt - 3)...killedAt).contains(down["downSince"]?.intValue ?? 0), "since its last heartbeat: \(down)")
        try await eventually("the overview lists it too") {
            watcher.state["nodes"]?.arrayValue?.map { $0["alive"] } == [true, false]
        }
        await client.close()
    }
}
