import TetherTUI

/// `calculator` (shared): a keypad of buttons (or typed keys) pressing `press`, the display and
/// the history.
@MainActor
final class CalculatorScreen: Screen {
    let body: Widget
    let hints = "type 0-9 + - * / % . = · Backspace back · Esc clear"
    private let context: ScreenContext

    static let keypad = [
        ["7", "8", "9", "/", "back"],
        ["4", "5", "6", "*", "clear"],
        ["1", "2", "3", "-", "%"],
        ["0", ".", "=", "+"],
    ]

    init(_ context: ScreenContext) {
        self.context = context
        let display = Label("", style: Style(bold: true), alignment: .right)
        let history = ListView([], isSelectable: false)
        history.followsEnd = true
        let keys = Stack(.vertical, Self.keypad.map { keys in
            row(keys.map { key in Button(key).onPress(context.action("press", ["key": .string(key)])) }, spacing: 1)
        })

        context.bind("/display", as: String.self, default: "") { display.text = $0.isEmpty ? "0" : $0 }
        context.bind(context.value("/history", as: [String].self, default: [])) { lines in
            history.items = lines.map { Line($0) }
        }
        let historyBox = Box(title: "History", history)
        let stack = Stack(.vertical, [Box(title: "Display", display), keys, historyBox])
        stack.setSize(.fill(), of: historyBox)
        body = stack
    }

    func handleKey(_ key: Key) -> Bool {
        let name: String
        switch key {
        case .char(let c) where "0123456789+-*/%.=".contains(c): name = String(c)
        case .backspace: name = "back"
        case .escape: name = "clear"
        default: return false
        }
        context.perform("press", ["key": .string(name)])
        return true
    }
}
