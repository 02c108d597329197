import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// Webhooks on a cluster: the events are in JetStream from the moment their actions are acked,
/// and one node delivers them. `kill -9` of the room's owner and of the delivering node, while
/// the receiver refuses everything, loses none.
@Suite("End to end: webhooks on a cluster", .serialized, .timeLimit(.minutes(4)))
@MainActor
struct ClusterWebhookTests {
    /// The node whose `GET /webhooks` says it delivers.
    static func deliverer(_ cluster: ClusterFixture) -> String? {
        for name in ["n1", "n2", "n3"] {
            guard let daemon = cluster.nodes[name], daemon.isRunning,
                  let body = try? daemon.httpGET("/webhooks").body, let json = try? JSON(parsing: body) else { continue }
            if json["delivering"] == true { return name }
        }
        return nil
    }

    @Test func killingTheOwnerAndTheDeliveringNodeLosesNoEvent() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        try receiver.control(["mode": "status", "status": 503])
        let cluster = try ClusterFixture(arguments: ["--config", try receiver.configFile(events: ["action.applied"])])
        defer { cluster.stop() }
        try await eventually("a node delivers webhooks", timeout: .seconds(20)) { Self.deliverer(cluster) != nil }
        for index in 1...30 {
            let answer = try HTTPAPITests.curl("http://127.0.0.1:\(cluster.node("n1").port)", "POST", "/rooms/counter/actions/increment",
                                               headers: ["Tether-Client: cluster-hooks", "Idempotency-Key: \(index)"])
            #expect(answer.status == 200, "\(answer)")
        }
        try await eventually("the receiver refused the first event", timeout: .seconds(20)) { try receiver.received().attempts > 0 }
        let owner = try #require(cluster.owner(of: "counter"))
        let deliverer = try #require(Self.deliverer(cluster))
        // Another node has no queue of its own: it says who delivers, and sends retries there.
        let other = try #require(["n1", "n2", "n3"].first { $0 != deliverer })
        let listed = try JSON(parsing: try cluster.node(other).httpGET("/webhooks").body)
        #expect(listed["delivering"] == false && listed["deliveredBy"]?.stringValue == deliverer, "\(listed)")
        let retry = try HTTPAPITests.curl("http://127.0.0.1:\(cluster.node(other).port)", "POST", "/webhooks/test/retry")
        #expect(retry.status == 409 && retry.body.contains("node \(deliverer) delivers them"), "\(retry)")
        for name in Set([owner, deliverer]) { cluster.node(name).kill9() }
        try receiver.control(["mode": "ok"])
        let started = ContinuousClock.now
        try await eventually("all 30 events delivered by a surviving node", timeout: .seconds(90)) {
            try receiver.appliedVersions(room: "counter") == Array(1...30)
        }
        let got = try receiver.received()
        print("cluster webhooks: owner \(owner) and deliverer \(deliverer) killed; 30 acked, \(got.events.count) delivered, \(got.duplicates) duplicates, \(got.attempts) attempts, within \(ContinuousClock.now - started)")
        #expect(got.bad == 0)
        let order = got.events.compactMap { $0["data"]?["version"]?.intValue }
        #expect(order == Array(1...30), "one room's events in version order: \(order)")
    }
}
