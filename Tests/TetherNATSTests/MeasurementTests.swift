import Foundation
import Testing
import TetherJSON
import TetherNATS
import TetherTestSupport

/// Latencies and read rates on a loopback 3-server cluster, printed as medians and p99 (the
/// figures in docs/DESIGN.md). Timing only: run on demand with
/// `TETHER_NATS_MEASURE=1 swift test --skip-build --filter NATSMeasurements`.
extension NATS {
    @Suite(.enabled(if: ProcessInfo.processInfo.environment["TETHER_NATS_MEASURE"] != nil))
    struct NATSMeasurements {
        static func summary(_ samples: [Duration]) -> String {
            let sorted = samples.sorted()
            func milliseconds(_ duration: Duration) -> String {
                String(format: "%.3f ms", Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000)
            }
            return "p50 \(milliseconds(sorted[sorted.count / 2])), p99 \(milliseconds(sorted[sorted.count * 99 / 100])) (\(sorted.count) samples)"
        }

        @Test func latenciesAndCatchUpRate() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let writer = try connect([cluster.servers[0].url], name: "writer")
            let js = try writer.jetStream()
            _ = try await js.addOrUpdateStream(.init(name: "LOG", subjects: ["log.>"], replicas: 3))
            let leader = try await js.streamInfo("LOG").leader ?? "?"
            let payload = [UInt8](repeating: UInt8(ascii: "x"), count: 220)

            // Publish → PubAck, R3, one append in flight (as a room does).
            var appends: [Duration] = []
            var last: UInt64 = 0
            for index in 0..<2000 {
                let start = ContinuousClock.now
                last = try await js.publish("log.latency", payload, messageID: "latency/\(index)", expectedLastSubjectSequence: last)
                appends.append(ContinuousClock.now - start)
            }
            print("R3 publish → PubAck (client on n1, stream leader \(leader)): \(Self.summary(appends))")

            // Request/reply across servers.
            let responder = try connect([cluster.servers[1].url], name: "responder")
            let service = try responder.subscribe("service") { try? $0.respond($0.data) }
            try await responder.flush()
            try await Task.sleep(for: .milliseconds(300))
            var requests: [Duration] = []
            for _ in 0..<2000 {
                let start = ContinuousClock.now
                let reply = try await writer.request("service", payload, timeout: .seconds(2))
                requests.append(ContinuousClock.now - start)
                #expect(reply.data.count == payload.count)
            }
            print("request/reply n1 → n2 → n1: \(Self.summary(requests))")
            _ = service

            // Catch-up: 3,000 messages of one subject (among others), ordered consumer vs one
            // message-get request per message.
            let acks = Collector<Result<UInt64, NATSError>>()
            for index in 0..<6000 {
                js.publish(index % 2 == 0 ? "log.room" : "log.other", payload) { acks.append($0) }
            }
            _ = try await acks.wait(for: 6000, timeout: .seconds(60))
            let reader = try connect([cluster.servers[2].url], name: "reader").jetStream()
            var orderedRates: [Double] = []
            for _ in 0..<3 {
                let start = ContinuousClock.now
                let messages = try await reader.messages(stream: "LOG", subject: "log.room", from: 1)
                let seconds = Double((ContinuousClock.now - start).components.attoseconds) / 1e18
                    + Double((ContinuousClock.now - start).components.seconds)
                #expect(messages.count == 3000)
                orderedRates.append(Double(messages.count) / seconds)
            }
            let start = ContinuousClock.now
            var sequence: UInt64 = 1
            var count = 0
            while true {
                let request: JSON = ["seq": .int(Int(sequence)), "next_by_subj": "log.room"]
                let reply = try await reader.connection.request("$JS.API.STREAM.MSG.GET.LOG", JSONWriter.encode(request), timeout: .seconds(2))
                let json = try JSONParser().parse(reply.data)
                guard let found = json["message"]?["seq"]?.intValue else { break }
                count += 1
                sequence = UInt64(found) + 1
            }
            let elapsed = ContinuousClock.now - start
            let getRate = Double(count) / (Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
            #expect(count == 3000)
            print(String(format: "catch-up of 3,000 × 220 B: ordered consumer %.0f msg/s (median of 3), one MSG.GET per message %.0f msg/s",
                         orderedRates.sorted()[1], getRate))
        }
    }
}
