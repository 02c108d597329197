#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Nanoseconds on the monotonic clock (CLOCK_MONOTONIC: time since boot, shared by every process
/// of the machine, so a publisher's send time and a subscriber's receive time compare directly).
@inline(__always)
func monotonicNanos() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec &* 1_000_000_000 &+ now.tv_nsec
}

/// Sleeps the calling thread (the main thread's polling pauses).
func sleep(seconds: Double) {
    var wait = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    nanosleep(&wait, nil)
}

/// Seconds elapsed since `start` (monotonic ns).
func seconds(since start: Int) -> Double {
    Double(monotonicNanos() - start) / 1e9
}
