import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport

/// Latencies in a cluster, for the record (not asserted: timings on a shared machine are noise
/// for a test). Run with TETHER_CLUSTER_MEASURE=1:
/// `TETHER_CLUSTER_MEASURE=1 swift test --skip-build --filter ClusterMeasurementTests`
@Suite("Cluster measurements", .serialized, .enabled(if: ProcessInfo.processInfo.environment["TETHER_CLUSTER_MEASURE"] == "1"))
@MainActor
struct ClusterMeasurementTests {
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func summary(_ values: [Double]) -> String {
        String(format: "p50 %.2f ms, p99 %.2f ms (n=%d)", percentile(values, 0.5), percentile(values, 0.99), values.count)
    }

    @Test func actionRoundTripAndFanOutLatencyByNode() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        let room = "bench:measure"
        // n1 owns the room: its client joins first.
        let first = try await cluster.client(at: "n1")
        _ = first.room(room)
        try await eventually("an owner", timeout: .seconds(20)) { cluster.owner(of: room) == "n1" }

        // Send → ack, one action at a time, from the owner's node and from another node.
        var roundTrips: [String: [Double]] = [:]
        for name in ["n1", "n2"] {
            let client = try await cluster.client(at: name)
            for i in 0..<300 {
                let start = ContinuousClock.now
                _ = try await client.send("set", to: room, args: ["key": "rt", "value": .int(i)])
                roundTrips[name, default: []].append(Self.milliseconds(.now - start))
            }
        }

        // Publish → receive for 50 subscribers on the owner's node and 50 on another, while a
        // publisher on the owner's node sends 100 actions per second.
        var latencies: [String: [Double]] = [:]
        var subscribers: [TetherClient] = []
        var tokens: [Any] = []
        for name in ["n1", "n2"] {
            for _ in 0..<50 {
                let client = try await cluster.client(at: name)
                subscribers.append(client)
                let mirror = client.room(room)
                tokens.append(mirror.observable("/fields/probe", as: JSON.self).observe { value in
                    guard let sent = value?["sent"]?.intValue else { return }
                    latencies[name, default: []].append(Double(DispatchTime.now().uptimeNanoseconds - UInt64(sent)) / 1e6)
                })
            }
        }
        try await eventually("subscribers synced", timeout: .seconds(30)) { subscribers.allSatisfy { $0.room(room).isSynced } }
        let publisher = try await cluster.client(at: "n1")
        for sequence in 0..<500 {
            let value: JSON = ["sent": .int(Int(DispatchTime.now().uptimeNanoseconds)), "seq": .int(sequence)]
            _ = try await publisher.send("set", to: room, args: ["key": "probe", "value": value])
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .seconds(1))
        _ = tokens
        print("cluster measure: send→ack on the owner's node \(Self.summary(roundTrips["n1"] ?? [])); on another node (forwarded) \(Self.summary(roundTrips["n2"] ?? []))")
        print("cluster measure: publish→receive, subscribers on the owner's node \(Self.summary(latencies["n1"] ?? [])); on another node \(Self.summary(latencies["n2"] ?? []))")
        #expect((latencies["n1"]?.count ?? 0) > 0 && (latencies["n2"]?.count ?? 0) > 0)
    }
}
