import Synchronization
import TetherServer

/// A clock that moves only when a test advances it, so room timers, idle sweeps, the
/// stuck-client check, token expiry and rate buckets run without sleeping. Timers fire in
/// deadline order as time passes them (swift-nio's `EmbeddedEventLoop.advanceTime` is the model).
public final class TestClock: ServerClock, Sendable {
    private struct Timer {
        let id: Int
        let interval: Duration
        var deadline: Duration
        let tick: @Sendable () -> Void
    }

    private struct State {
        var elapsed: Duration = .zero
        var timers: [Timer] = []
        var nextID = 0
    }

    private let base = ContinuousClock.now
    private let wallStart: Int
    private let state = Mutex(State())

    /// `secondsSince1970` starts at `wallStart`.
    public init(wallStart: Int = 1_800_000_000) {
        self.wallStart = wallStart
    }

    public var now: ContinuousClock.Instant { base + state.withLock { $0.elapsed } }

    public var secondsSince1970: Int { wallStart + Int(state.withLock { $0.elapsed }.components.seconds) }

    public var millisecondsSince1970: Int {
        let elapsed = state.withLock { $0.elapsed }.components
        return wallStart * 1000 + Int(elapsed.seconds) * 1000 + Int(elapsed.attoseconds / 1_000_000_000_000_000)
    }

    /// Time since the clock was made.
    public var elapsed: Duration { state.withLock { $0.elapsed } }

    public func startTimer(every interval: Duration, _ tick: @escaping @Sendable () -> Void) -> any ServerTimer {
        let id = state.withLock { state in
            state.nextID += 1
            state.timers.append(Timer(id: state.nextID, interval: interval, deadline: state.elapsed + interval, tick: tick))
            return state.nextID
        }
        return Handle(clock: self, id: id)
    }

    /// Moves time forward by `duration`, firing each due timer at its deadline; `afterEachTick`
    /// runs after every firing (a test server runs the work the tick handed out).
    public func advance(by duration: Duration, afterEachTick: () -> Void = {}) {
        let target = state.withLock { $0.elapsed } + duration
        while true {
            let due: (@Sendable () -> Void)? = state.withLock { state in
                guard let index = state.timers.indices.min(by: { state.timers[$0].deadline < state.timers[$1].deadline }),
                      state.timers[index].deadline <= target else { return nil }
                state.elapsed = max(state.elapsed, state.timers[index].deadline)
                state.timers[index].deadline += state.timers[index].interval
                return state.timers[index].tick
            }
            guard let due else { break }
            due()
            afterEachTick()
        }
        state.withLock { $0.elapsed = target }
    }

    /// Timers not cancelled.
    public var activeTimerCount: Int { state.withLock { $0.timers.count } }

    fileprivate func cancel(_ id: Int) {
        state.withLock { $0.timers.removeAll { $0.id == id } }
    }

    private struct Handle: ServerTimer {
        let clock: TestClock
        let id: Int
        func cancel() { clock.cancel(id) }
    }
}
