import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport

/// The cluster's crash test: clients on every node mirror and act while random tetherd nodes are
/// killed with SIGKILL and started again. Then every acknowledged action must be in the final
/// state, no client may have seen a gap or a fork, every mirror must equal a fresh snapshot.
///
/// This is the short version; `Scripts/cluster-chaos.sh` runs it longer
/// (CLUSTER_CHAOS_KILLS, CLUSTER_CHAOS_CLIENTS, CLUSTER_CHAOS_SECONDS_BETWEEN_KILLS).
@Suite("End to end: cluster chaos", .serialized, .timeLimit(.minutes(30)))
@MainActor
struct ClusterChaosTests {
    @Test func killingRandomNodesLosesNothingAcknowledged() async throws {
        let kills = ChaosTests.setting("CLUSTER_CHAOS_KILLS", 3)
        let clientCount = ChaosTests.setting("CLUSTER_CHAOS_CLIENTS", 6)
        let secondsBetweenKills = ChaosTests.setting("CLUSTER_CHAOS_SECONDS_BETWEEN_KILLS", 3)
        let names = ["n1", "n2", "n3"]
        let cluster = try ClusterFixture(nodes: names)
        defer { cluster.stop() }
        let room = "bench:chaos"
        var observers: [StreamObserver] = []
        for index in 0..<clientCount {
            let client = try await cluster.client(at: names[index % names.count])
            observers.append(StreamObserver(client: client, room: client.room(room)))
        }
        try await eventually("mirrors synced", timeout: .seconds(30)) { observers.allSatisfy(\.room.isSynced) }
        var publishers: [Publisher] = []
        for (index, name) in names.enumerated() {
            publishers.append(Publisher(client: try await cluster.client(at: name), index: index, room: room))
        }

        var rng = SystemRandomNumberGenerator()
        for kill in 1...max(1, kills) {
            try await Task.sleep(for: .seconds(secondsBetweenKills))
            let victim = names.randomElement(using: &rng)!
            let port = cluster.node(victim).port
            cluster.node(victim).kill9()
            try await Task.sleep(for: .milliseconds(500))
            try cluster.start(victim, port: port)
            let killedAt = ContinuousClock.now
            do {
                try await eventually("acks again after kill \(kill) (\(victim))", timeout: .seconds(30)) {
                    publishers.contains { $0.firstAck(ofActionSentAfter: killedAt) != nil }
                }
            } catch {
                Issue.record("no acks after kill \(kill):\n\(cluster.logs)")
                throw error
            }
        }
        try await Task.sleep(for: .seconds(1))
        for publisher in publishers { await publisher.stop() }

        let referenceClient = try await cluster.client(at: "n1")
        let reference = referenceClient.room(room)
        try await eventually("a fresh mirror", timeout: .seconds(30)) { reference.isSynced }
        try await eventually("every mirror converges", timeout: .seconds(60)) {
            observers.allSatisfy { $0.room.version == reference.version && $0.client.connectionState.value.isConnected }
        }
        ClusterTests.checkObservers(observers, equal: reference)
        let lost = ClusterTests.lost(publishers, in: reference.state)
        #expect(lost.isEmpty, "acknowledged but lost: \(lost.prefix(10))")
        let acked = publishers.map(\.acks.count).reduce(0, +)
        let gaps = observers.map(\.gaps.count).reduce(0, +)
        let forks = observers.map(\.forks.count).reduce(0, +)
        print("cluster chaos: kills survived \(kills), clients \(clientCount), acked actions \(acked) (last value of \(publishers.map(\.acked.count).reduce(0, +)) keys checked), lost \(lost.count), gaps \(gaps), forks \(forks), actions without ack \(publishers.map(\.unacknowledged).reduce(0, +)), final version \(reference.version ?? -1)")
    }
}
