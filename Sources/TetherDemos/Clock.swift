import Glibc
import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherState

/// `ClockContract`'s ViewModel: the server's local time, kept current by a timer.
public final class Clock: ViewModel, ClockContract.Implementation {
    public let time = Observable(Clock.now())

    public init(context: ViewModelContext) {
        // Ticking four times a second keeps the label within 250 ms of the wall clock; ticks
        // that don't change the text produce no patch.
        context.every(.milliseconds(250)) { [unowned self] in
            self.time.value = Clock.now()
        }
    }

    public static let actions = ActionTable(ClockContract.binding(Clock.self))

    static func now() -> String {
        var seconds = Glibc.time(nil)
        var parts = tm()
        localtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }
}
