import Dispatch
import Foundation
import Testing
import TetherClient
import TetherProtocol
import TetherJSON
import TetherTestSupport

/// One client stops reading while others stay live: the room and the others go on at the same
/// latency, the daemon's memory stays bounded by the queue bound, and the slow client converges
/// once it reads again.
@Suite("End to end: slow consumer", .serialized)
@MainActor
struct SlowConsumerTests {
    static func nowNanoseconds() -> Int { Int(DispatchTime.now().uptimeNanoseconds) }

    /// Publishes `count` bench values carrying their send time and returns the latencies (ms)
    /// the live clients saw.
    private func publish(_ count: Int, every interval: Duration, payload: String, writer: TetherClient,
                         live: [RemoteRoom]) async throws -> [Double] {
        var latencies: [Double] = []
        var received: [Int: Int] = [:]  // sequence -> how many live clients saw it
        var tokens: [Any] = []
        for room in live {
            tokens.append(room.observable("/fields/probe", as: JSON.self).observe { value in
                guard let sent = value?["sent"]?.intValue, let sequence = value?["seq"]?.intValue else { return }
                latencies.append(Double(Self.nowNanoseconds() - sent) / 1e6)
                received[sequence, default: 0] += 1
            })
        }
        for sequence in 0..<count {
            let value: JSON = ["sent": .int(Self.nowNanoseconds()), "seq": .int(sequence), "payload": .string(payload)]
            _ = try await writer.send("set", to: "bench:slow", args: ["key": "probe", "value": value])
            try await Task.sleep(for: interval)
        }
        try await eventually("every live client saw every value") { received.count == count && received.values.allSatisfy { $0 == live.count } }
        _ = tokens
        return latencies
    }

    private func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// One client stops reading for 30 s while 100 others stay live (SLOW_CONSUMER_SECONDS and
    /// SLOW_CONSUMER_CLIENTS override the figures).
    @Test func aStalledClientCostsNothingButItsOwnQueue() async throws {
        let stallSeconds = ProcessInfo.processInfo.environment["SLOW_CONSUMER_SECONDS"].flatMap(Int.init) ?? 30
        let clientCount = ProcessInfo.processInfo.environment["SLOW_CONSUMER_CLIENTS"].flatMap(Int.init) ?? 100
        let rate = 100  // actions per second, each a 2 KB patch to every client
        let queueBound = 256 << 10
        // The stuck-client timeout is far beyond the stall: when the test suite runs many suites at once, the
        // 30 s stall can stretch past the default 60 s, and a merely slow client must not be closed here; nor
        // may the keepalive count it dead for pongs it has not read yet.
        let daemon = try Daemon(arguments: ["--send-queue-bytes", "\(queueBound)", "--memory-only", "--stuck-client-seconds", "600",
                                          "--ping-seconds", "300", "--peer-timeout-seconds", "600"])
        defer { daemon.stop() }
        let writer = try await connectedClient(daemon)
        var liveClients: [TetherClient] = []
        for _ in 0..<clientCount { liveClients.append(try await connectedClient(daemon)) }
        let live = liveClients.map { $0.room("bench:slow") }
        try await eventually { live.allSatisfy(\.isSynced) }
        let payload = String(repeating: "x", count: 2_000)

        let baseline = try await publish(rate * 5, every: .milliseconds(1000 / rate), payload: payload, writer: writer, live: live)
        let rssBefore = daemon.residentBytes()

        // The slow client joins, then stops reading; its receive buffer is tiny.
        let slow = try RawWebSocket(port: daemon.port, receiveBufferBytes: 4096)
        _ = try slow.receiveJSON()
        try slow.send(json: ["type": "join", "room": "bench:slow"])
        var rssSamples: [Int] = []
        let sampler = Task { @MainActor in
            while !Task.isCancelled {
                rssSamples.append(daemon.residentBytes())
                try? await Task.sleep(for: .seconds(1))
            }
        }
        let during = try await publish(rate * stallSeconds, every: .milliseconds(1000 / rate), payload: payload, writer: writer, live: live)
        sampler.cancel()

        let metrics = try daemon.httpGET("/metrics").body
        #expect(!metrics.contains("tether_send_queue_overflows_total 0"), "the slow client's queue overflowed")
        #expect(!metrics.contains("tether_stuck_clients_closed_total 1"), "a merely slow client is not disconnected")
        let p99Before = percentile(baseline, 0.99), p99During = percentile(during, 0.99)
        print("slow consumer: \(clientCount) live clients, stalled \(stallSeconds) s; live p50 \(percentile(baseline, 0.5)) -> \(percentile(during, 0.5)) ms, p99 \(p99Before) -> \(p99During) ms; daemon RSS \(rssBefore >> 20) MiB before, \((rssSamples.min() ?? 0) >> 20)-\((rssSamples.max() ?? 0) >> 20) MiB during")
        // Bounded generously: the test suite runs other suites beside this one, and a stalled
        // client that held the others up would cost seconds, not tens of milliseconds.
        #expect(p99During <= max(p99Before * 3, p99Before + 100), "live p99 \(p99Before) ms before, \(p99During) ms with a stalled client")
        let undelivered = rate * stallSeconds * payload.utf8.count
        #expect((rssSamples.max() ?? 0) - rssBefore < 32 << 20, "daemon memory stayed flat while \(undelivered >> 20) MB went undelivered")

        // Reading again, the slow client converges: its stream (snapshot, patches) ends at the
        // room's state.
        let reference = live[0]
        var state: JSON = .null
        var version = -1
        let deadline = ContinuousClock.now + .seconds(20)
        while version != reference.version, ContinuousClock.now < deadline {
            let message = try slow.receiveJSON()
            switch message["type"]?.stringValue {
            case "snapshot":
                state = try #require(message["state"])
                version = try #require(message["version"]?.intValue)
            case "patch":
                #expect(message["from"]?.intValue == version, "gapless after the snapshot")
                try state.apply(JSONPatch.decode(try #require(message["ops"])))
                version = try #require(message["version"]?.intValue)
            default: break
            }
        }
        #expect(version == reference.version)
        #expect(state == reference.state)
        for client in liveClients + [writer] { await client.close() }
    }

    /// A client that falls behind gets several versions per frame (merged patches), and its
    /// stream stays exact.
    @Test func aClientBehindGetsMergedPatches() async throws {
        let daemon = try Daemon(arguments: ["--send-queue-bytes", "\(8 << 20)", "--max-actions-per-second", "100000", "--action-burst", "100000"])
        defer { daemon.stop() }
        let reader = try RawWebSocket(port: daemon.port, receiveBufferBytes: 4096)
        _ = try reader.receiveJSON()
        try reader.send(json: ["type": "join", "room": "bench:merge"])
        let publisher = try RawWebSocket(port: daemon.port)
        _ = try publisher.receiveJSON()
        let count = 5_000
        for id in 1...count {
            try publisher.send(json: ["type": "action", "room": "bench:merge", "name": "set", "id": .int(id),
                                      "args": ["key": .string("k\(id % 10)"), "value": .int(id)]])
        }
        _ = try publisher.receiveJSON(timeout: .seconds(30)) { $0["id"] == .int(count) }

        var state: JSON = .null
        var version = -1, frames = 0, widest = 0
        while version < count {
            let message = try reader.receiveJSON(timeout: .seconds(10))
            if message["type"] == "snapshot" {
                state = try #require(message["state"])
                version = try #require(message["version"]?.intValue)
            } else if message["type"] == "patch" {
                let from = try #require(message["from"]?.intValue), to = try #require(message["version"]?.intValue)
                #expect(from == version, "gapless")
                try state.apply(JSONPatch.decode(try #require(message["ops"])))
                version = to
                widest = max(widest, to - from)
                frames += 1
            }
        }
        #expect(version == count)
        #expect(state["fields"]?["k0"] == .int(count))
        #expect(widest > 1, "some frame carried several versions")
        #expect(frames < count, "\(frames) frames for \(count) versions")
        let metrics = try daemon.httpGET("/metrics").body
        #expect(!metrics.contains("tether_merged_patch_frames_total 0"))
    }
}
