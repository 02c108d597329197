import TetherClient
import TetherDemoContracts
import TetherTUI

/// `calculator` (shared): a keypad of buttons (arrow keys move on it; typed keys press it too)
/// pressing `press`, the display (its end stays visible when it is too long) and the history.
/// `%` is the remainder (modulo), and its key says so.
@MainActor
final class CalculatorScreen: Screen {
    let body: Widget
    private let context: ScreenContext
    private let calculator: ContractRoom<CalculatorContract>

    static let keypad = [
        ["7", "8", "9", "/", "back"],
        ["4", "5", "6", "*", "clear"],
        ["1", "2", "3", "-", "%"],
        ["0", ".", "=", "+"],
    ]

    static func face(of key: String) -> String { key == "%" ? "% mod" : key }

    init(_ context: ScreenContext) {
        self.context = context
        calculator = context.room(CalculatorContract.self)
        let display = Label("", style: Style(bold: true), alignment: .right, truncation: .head)
        let history = ListView([], isSelectable: false)
        history.followsEnd = true
        let keys = Stack(.vertical, Self.keypad.map { keys in
            Stack.row(keys.map { key in Button(Self.face(of: key)) }, spacing: 1)
        })
        keys.arrowKeysMoveFocus = true
        let historyBox = Box(title: "History", history)
        let stack = Stack(.vertical, [Box(title: "Display", display), keys, historyBox])
        stack.setSize(.fill(), of: historyBox)
        body = stack
        for (row, rowKeys) in zip(keys.children, Self.keypad) {
            for (button, key) in zip(row.children.compactMap { $0 as? Button }, rowKeys) {
                button.onPress { [unowned self] in await self.press(key) }
            }
        }

        context.bind(CalculatorContract.Fields.display, default: "") { text in
            display.text = text.isEmpty ? "0" : text
            display.style = Style(fg: text.hasPrefix("Error") ? .red : nil, bold: true)
        }
        context.bind(CalculatorContract.Fields.history, default: []) { lines in
            history.items = lines.map { Line($0) }
        }
        context.hints.value = ["type 0-9 + - * / % . =", "arrows move on the keypad", "Backspace back", "Esc clear", "% is the remainder"]
    }

    /// Presses `key` on the server's calculator (which starts a new number when a digit
    /// follows `=`).
    func press(_ key: String) async {
        await context.send(calculator.press, .init(key: key), predict: Self.prediction(for: key))
    }

    /// What a key does to the display, as the server's calculator does it, so it shows at once;
    /// `=` is left to the server (it evaluates). After `=` (the display is the last history
    /// line's result) a digit starts a new number.
    static func prediction(for key: String) -> ((inout CalculatorContract.State) -> Void)? {
        guard key != "=" else { return nil }
        return { state in
            var text = state.display
            if text.hasPrefix("Error") { text = "" }
            let showsResult = !text.isEmpty && state.history.last?.hasSuffix(" = \(text)") == true
            if showsResult, key.first?.isNumber == true || key == "." { text = "" }
            switch key {
            case "clear": text = ""
            case "back": if !text.isEmpty { text.removeLast() }
            default:
                guard text.count < maximumDisplayLength else { return }
                text += key
            }
            state.display = text
        }
    }

    /// The server's longest display.
    static let maximumDisplayLength = 64

    func handleKey(_ key: Key) -> Bool {
        let name: String
        switch key {
        case .char(let c) where "0123456789+-*/%.=".contains(c): name = String(c)
        case .backspace: name = "back"
        case .escape: name = "clear"
        default: return false
        }
        context.run { [unowned self] in await self.press(name) }
        return true
    }
}
