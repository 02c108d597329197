import Foundation
import Testing
import TetherTestSupport

/// tetherd reads the NATS servers' `/varz` (`--nats-monitoring`) and says whether an ack survives
/// the NATS servers losing power together: at start in its log, and in `tetherd check`.
@Suite("End to end: whether NATS fsyncs each write", .serialized)
struct NATSDurabilityCheckTests {
    @Test func aServerThatSyncsOnATimerIsReportedAtStartAndByCheck() throws {
        let nats = try NATSCluster(size: 1, syncAlways: false)
        defer { nats.stop() }
        let daemon = try Daemon(arguments: ["--nats", nats.urls[0], "--nats-monitoring", nats.monitoringURLs[0], "--nats-replicas", "1"],
                                timeout: .seconds(60))
        defer { _ = daemon.stop() }
        try waitUntil(timeout: .seconds(10)) { daemon.stderr.contains("fsyncs JetStream") }
        #expect(daemon.stderr.contains("not each write: an acknowledged action can be lost"), "\(daemon.stderr.suffix(2000))")

        let check = try Daemon.runToExit(["check", "--nats", nats.urls[0], "--nats-monitoring", nats.monitoringURLs[0]])
        #expect(check.status == 0, "a warning, not an invalid configuration")
        #expect(check.stderr.contains("warning: NATS server") && check.stderr.contains("fsyncs JetStream"), "\(check.stderr)")

        let unchecked = try Daemon.runToExit(["check", "--nats", nats.urls[0]])
        #expect(unchecked.stderr.contains("give their monitoring endpoints with --nats-monitoring"), "\(unchecked.stderr)")
    }

    /// Runs where the nats-server has `sync_interval` (2.10 on: Scripts/test.sh runs this suite
    /// again with TETHER_NATS_SERVER set to a current one).
    @Test(.enabled(if: NATSCluster.syncIntervalSupported))
    func aServerThatSyncsEveryWriteGetsNoWarning() throws {
        let nats = try NATSCluster(size: 1, syncAlways: true)
        defer { nats.stop() }
        let daemon = try Daemon(arguments: ["--nats", nats.urls[0], "--nats-monitoring", nats.monitoringURLs[0], "--nats-replicas", "1"],
                                logLevel: "info", timeout: .seconds(60))
        defer { _ = daemon.stop() }
        try waitUntil(timeout: .seconds(10)) { daemon.stderr.contains("fsyncs every JetStream write before its ack") }
        #expect(!daemon.stderr.contains("not each write"))
        let check = try Daemon.runToExit(["check", "--nats", nats.urls[0], "--nats-monitoring", nats.monitoringURLs[0]])
        #expect(check.status == 0 && !check.stderr.contains("warning"), "\(check.stderr)")
    }
}
