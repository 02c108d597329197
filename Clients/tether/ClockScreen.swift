import TetherDemoContracts
import TetherTUI

/// `clock`: the server's time, ticking, in big digits (plain text on a low terminal).
@MainActor
final class ClockScreen: Screen {
    let body: Widget

    init(_ context: ScreenContext) {
        let big = BigText("")
        big.showsPlainFallback = false  // the line below shows the value too
        let label = Label("waiting for the time…", alignment: .center)
        context.bind(context.value(ClockContract.Fields.time)) { time in
            big.text = time ?? ""
            label.text = time.map { "server time \($0)" } ?? "waiting for the time…"
        }
        let stack = Stack(.vertical, [Spacer(.vertical), big, Label(), label, Spacer(.vertical)])
        stack.setCollapsible(big)
        body = stack
        context.hints.value = ["the server updates the time every second"]
    }
}
