import TetherTUI

/// `counter`: the shared count in big digits, and buttons (or + - r) to change it. The buttons
/// read "[ - ]  [ + ]  [ reset ]": "-" has the focus first, Tab reaches "+".
@MainActor
final class CounterScreen: Screen {
    let body: Widget
    let hints = "+ / - / r change the count · Enter presses the focused button"
    private let context: ScreenContext

    init(_ context: ScreenContext) {
        self.context = context
        let big = BigText("-")
        let label = Label("count: -", alignment: .center)
        let plus = Button("+").onPress(context.action("increment"))
        let minus = Button("-").onPress(context.action("decrement"))
        let reset = Button("reset").onPress(context.action("reset"))

        context.bind(context.value("/count", as: Int.self)) { count in
            let text = count.map(String.init) ?? "-"
            big.text = text
            label.text = "count: \(text)"
        }
        body = Stack(.vertical, spacing: 1, [Spacer(.vertical), big, label, centeredRow([minus, plus, reset]), Spacer(.vertical)])
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char("+"): context.perform("increment")
        case .char("-"): context.perform("decrement")
        case .char("r"): context.perform("reset")
        default: return false
        }
        return true
    }
}
