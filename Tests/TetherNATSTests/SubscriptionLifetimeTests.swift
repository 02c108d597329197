import Foundation
import Synchronization
import Testing
@testable import TetherNATS
import TetherTestSupport

extension NATS {
    /// A subscription released while its messages are arriving must not be freed under the
    /// connection's reader (libnats 3.4.1 looks a subscription up and then uses it outside the
    /// lock: nats.c issue 637). Freed memory is scribbled over (`mallopt(M_PERTURB)`), so a use
    /// after free reads garbage and crashes instead of passing by luck.
    @Suite struct SubscriptionLifetimeTests {
        @Test func subscriptionsReleasedUnderAFloodOfMessagesAreNotUsedAfterFree() async throws {
            _ = mallopt(mallocPerturb, 0xa5)
            defer { _ = mallopt(mallocPerturb, 0) }
            // The reaper is one for the process: a subscription of an earlier test whose connection
            // still reconnects to its stopped servers waits there for good (CI rehearsal, 1 left).
            let waitingBefore = SubscriptionReaper.waiting
            let cluster = try NATSCluster(size: 1)
            defer { cluster.stop() }
            let publisher = try connect(cluster.urls, name: "flood")
            let subscriber = try connect(cluster.urls, name: "churn")
            let flooding = Atomic<Bool>(true)
            let payload = [UInt8](repeating: 0x41, count: 16 * 1024)
            let flood = Thread {
                while flooding.load(ordering: .relaxed) { try? publisher.publish("flood", payload) }
            }
            flood.start()
            defer { flooding.store(false, ordering: .relaxed) }

            let received = Atomic<Int>(0)
            for _ in 0..<3_000 {
                let subscription = try subscriber.subscribe("flood") { _ in received.add(1, ordering: .relaxed) }
                try? await Task.sleep(for: .microseconds(200))
                _ = subscription  // released here, while messages for it are being read
            }
            flooding.store(false, ordering: .relaxed)
            // On a busy 2-core machine the server may cut the subscriber off as a slow consumer
            // (64 MB behind), also after the flood stopped (its buffer still draining: a CI
            // rehearsal's flush failed so); it reconnects. Only a crash or a stuck reconnect fails.
            let reconnected = ContinuousClock.now + .seconds(10)
            var flushed = false
            while !flushed, ContinuousClock.now < reconnected {
                do { try await subscriber.flush(); flushed = true } catch { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(flushed, "connected again, a flush goes through")
            #expect(received.load(ordering: .relaxed) > 0, "the subscriptions received the flood")
            // Every released subscription is destroyed soon after (none leaks).
            let deadline = ContinuousClock.now + .seconds(10)
            while SubscriptionReaper.waiting > waitingBefore, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(SubscriptionReaper.waiting <= waitingBefore, "\(SubscriptionReaper.waiting) waiting, \(waitingBefore) before the test")
        }
    }
}

/// glibc's `mallopt` (in `<malloc.h>`, which the Glibc module leaves out); `M_PERTURB` fills
/// freed memory with the given byte.
@_silgen_name("mallopt") private func mallopt(_ parameter: Int32, _ value: Int32) -> Int32
private let mallocPerturb: Int32 = -6
