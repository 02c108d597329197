import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sends actions on time: sleeps (absolute, monotonic) until the next action is due and posts
/// every due action to the publisher thread. At high rates one wake-up carries several actions;
/// a late wake-up catches up, so the offered rate holds.
final class Pacer: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    func start(shard: PublisherShard, rate: Double, from start: Int, until end: Int) {
        let interval = 1e9 / rate
        let thread = Thread { [self] in
            var issued = 0
            while !stopFlag.load(ordering: .relaxed) {
                let now = monotonicNanos()
                if now >= end { break }
                let due = Int(Double(now - start) / interval) + 1
                if due > issued {
                    let first = issued, count = due - issued
                    shard.client.execute { shard.send(first: first, count: count) }
                    issued = due
                }
                let next = min(end, start + Int((Double(issued) * interval).rounded(.up)))
                var wake = timespec(tv_sec: next / 1_000_000_000, tv_nsec: next % 1_000_000_000)
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil)
            }
            finished.signal()
        }
        thread.name = "tether-load-pacer"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    func stop() {
        stopFlag.store(true, ordering: .relaxed)
    }

    func wait() {
        finished.wait()
    }
}
