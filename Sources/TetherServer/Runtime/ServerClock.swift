import Dispatch
import Foundation

/// Time as the server sees it. Production reads the system clocks; tests advance a clock by
/// hand (TetherTesting's `TestClock`), so room timers, idle-room sweeps, the stuck-client check,
/// token expiry and rate buckets run without sleeping.
public protocol ServerClock: Sendable {
    /// Monotonic time, for timeouts and rates.
    var now: ContinuousClock.Instant { get }
    /// Wall-clock seconds since 1970, for token expiry.
    var secondsSince1970: Int { get }
    /// Wall-clock milliseconds since 1970: the time a ViewModel's turn reads (`context.now`).
    var millisecondsSince1970: Int { get }
    /// Calls `tick` every `interval` (the first time one interval from now) until the timer is
    /// cancelled. `tick` runs on no particular thread: it hands work to where it belongs.
    func startTimer(every interval: Duration, _ tick: @escaping @Sendable () -> Void) -> any ServerTimer
}

extension ServerClock {
    public var millisecondsSince1970: Int { secondsSince1970 * 1000 }
}

/// A repeating timer from a `ServerClock`.
public protocol ServerTimer: Sendable {
    func cancel()
}

/// The system's clocks; timers on a dispatch source.
public struct SystemClock: ServerClock {
    public init() {}

    public var now: ContinuousClock.Instant { .now }

    public var secondsSince1970: Int { Int(Date().timeIntervalSince1970) }

    public var millisecondsSince1970: Int { Int((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    public func startTimer(every interval: Duration, _ tick: @escaping @Sendable () -> Void) -> any ServerTimer {
        let source = DispatchSource.makeTimerSource(queue: .global())
        let nanoseconds = Int(interval.components.seconds) * 1_000_000_000 + Int(interval.components.attoseconds / 1_000_000_000)
        let repeating = DispatchTimeInterval.nanoseconds(max(1, nanoseconds))
        source.schedule(deadline: .now() + repeating, repeating: repeating, leeway: .milliseconds(10))
        source.setEventHandler(handler: tick)
        source.resume()
        return DispatchTimer(source: source)
    }

    private struct DispatchTimer: ServerTimer, @unchecked Sendable {
        let source: any DispatchSourceTimer  // DispatchSource is thread-safe
        func cancel() { source.cancel() }
    }
}
