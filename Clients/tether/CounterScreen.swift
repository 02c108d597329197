import TetherJSON
import TetherTUI

/// `counter`: the shared count in big digits, and buttons (or + - r) to change it. The buttons
/// read "[ - ]  [ + ]  [ reset ]": "-" has the focus first, Tab reaches "+". On a low terminal
/// the big digits give way and the count line alone shows the count.
@MainActor
final class CounterScreen: Screen {
    let body: Widget
    private let context: ScreenContext

    init(_ context: ScreenContext) {
        self.context = context
        let big = BigText("")
        big.showsPlainFallback = false  // the line below shows the value too
        let label = Label("waiting for the count…", alignment: .center)
        let plus = Button("+").onPress(context.action("increment", predict: Self.adding(1)))
        let minus = Button("-").onPress(context.action("decrement", predict: Self.adding(-1)))
        let reset = Button("reset").onPress(context.action("reset", predict: { $0.set("/count", to: 0) }))

        context.bind(context.value("/count", as: Int.self)) { count in
            // Nothing big before the first snapshot: a lone "-" would read as a minus sign.
            big.text = count.map(String.init) ?? ""
            label.text = count.map { "count: \($0)" } ?? "waiting for the count…"
        }
        // Blank rows as items (not stack spacing) so that no gap is spent beside the spacers.
        var rows: [Widget] = [Spacer(.vertical), big, Label(), label, Label(), Stack.centeredRow([minus, plus, reset])]
        if let here = context.presenceLabel() { rows += [Label(), here] }
        let stack = Stack(.vertical, rows + [Spacer(.vertical)])
        stack.setCollapsible(big)
        body = stack
        context.hints.value = ["+ - r change the count", "Enter presses the focused button"]
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char("+"): context.perform("increment", predict: Self.adding(1))
        case .char("-"): context.perform("decrement", predict: Self.adding(-1))
        case .char("r"): context.perform("reset", predict: { $0.set("/count", to: 0) })
        default: return false
        }
        return true
    }

    /// The prediction of a press: the count moves at once, the server's answer settles it.
    static func adding(_ step: Int) -> (inout JSON) -> Void {
        { state in
            guard let count = state["count"]?.intValue else { return }
            state.set("/count", to: .int(count &+ step))
        }
    }
}
