import TetherClient
import TetherDemoContracts
import TetherTUI

/// `counter`: the shared count in big digits, and buttons (or + - r) to change it. The buttons
/// read "[ - ]  [ + ]  [ reset ]": "-" has the focus first, Tab reaches "+". On a low terminal
/// the big digits give way and the count line alone shows the count.
@MainActor
final class CounterScreen: Screen {
    let body: Widget
    private let context: ScreenContext
    private let counter: ContractRoom<CounterContract>

    init(_ context: ScreenContext) {
        self.context = context
        let counter = context.room(CounterContract.self)
        self.counter = counter
        let big = BigText("")
        big.showsPlainFallback = false  // the line below shows the value too
        let label = Label("waiting for the count…", alignment: .center)
        let plus = Button("+").onPress(context.action(counter.increment, .init(), predict: Self.adding(1)))
        let minus = Button("-").onPress(context.action(counter.decrement, predict: Self.adding(-1)))
        let reset = Button("reset").onPress(context.action(counter.reset, predict: Self.zero))

        context.bind(context.value(CounterContract.Fields.count)) { count in
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
        case .char("+"): context.perform(counter.increment, .init(), predict: Self.adding(1))
        case .char("-"): context.perform(counter.decrement, predict: Self.adding(-1))
        case .char("r"): context.perform(counter.reset, predict: Self.zero)
        default: return false
        }
        return true
    }

    /// The prediction of a press: the count moves at once, the server's answer settles it.
    static func adding(_ step: Int) -> (inout CounterContract.State) -> Void {
        { $0.count &+= step }
    }

    static func zero(_ state: inout CounterContract.State) { state.count = 0 }
}
