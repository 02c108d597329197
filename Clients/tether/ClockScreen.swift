import TetherTUI

/// `clock`: the server's time, ticking, in big digits.
@MainActor
final class ClockScreen: Screen {
    let body: Widget
    let hints = "the server updates the time every second"

    init(_ context: ScreenContext) {
        let big = BigText("--:--:--")
        let label = Label("", alignment: .center)
        context.bind("/time", as: String.self, default: "--:--:--") { time in
            big.text = time
            label.text = "server time \(time)"
        }
        body = Stack(.vertical, spacing: 1, [Spacer(.vertical), big, label, Spacer(.vertical)])
    }
}
