import TetherClient
import TetherJSON
import TetherTUI

/// `calculator` (shared): a keypad of buttons (arrow keys move on it; typed keys press it too)
/// pressing `press`, the display (its end stays visible when it is too long) and the history.
/// `%` is the remainder (modulo), and its key says so.
@MainActor
final class CalculatorScreen: Screen {
    let body: Widget
    private let context: ScreenContext
    /// True when the display shows the result of `=`: a digit then starts a new number.
    private(set) var showsResult = false

    static let keypad = [
        ["7", "8", "9", "/", "back"],
        ["4", "5", "6", "*", "clear"],
        ["1", "2", "3", "-", "%"],
        ["0", ".", "=", "+"],
    ]

    static func face(of key: String) -> String { key == "%" ? "% mod" : key }

    init(_ context: ScreenContext) {
        self.context = context
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

        context.bind("/display", as: String.self, default: "") { text in
            display.text = text.isEmpty ? "0" : text
            display.style = Style(fg: text.hasPrefix("Error") ? .red : nil, bold: true)
        }
        context.bind(context.value("/history", as: [String].self, default: [])) { lines in
            history.items = lines.map { Line($0) }
        }
        context.room.observeChanges { [unowned self] change in
            showsResult = Self.showsResult(after: change, in: context.room, before: showsResult)
        }.store(in: context.bag)
        context.hints.value = ["type 0-9 + - * / % . =", "arrows move on the keypad", "Backspace back", "Esc clear", "% is the remainder"]
    }

    /// Whether the display shows a result after `change`. `=` appends to the history and then
    /// sets the display in the same turn, so in a patch a display change right after a history
    /// change is a result; any other display change is typing. After a snapshot: the display
    /// equals the result of the last history line.
    static func showsResult(after change: RoomChange, in room: RemoteRoom, before: Bool) -> Bool {
        switch change {
        case .snapshot:
            guard let display = room.state["display"]?.stringValue, !display.isEmpty,
                  let last = room.state["history"]?.arrayValue?.last?.stringValue else { return false }
            return last.hasSuffix(" = " + display)
        case .patch(_, _, let operations):
            var result = before
            var historyChanged = false
            for operation in operations {
                if operation.path.tokens.first == "history" { historyChanged = true }
                if operation.path.tokens == ["display"] {
                    result = historyChanged
                    historyChanged = false
                }
            }
            return result
        }
    }

    /// Presses `key`. A digit or "." after `=` starts a new number: the screen clears first, so
    /// "1+1=" then "5" shows 5, not 25 (harmless when the server starts over by itself).
    func press(_ key: String) async {
        if showsResult, key.count == 1, key.first!.isNumber || key == "." {
            showsResult = false
            guard await context.send("press", ["key": "clear"]) else { return }
        }
        await context.send("press", ["key": .string(key)])
    }

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
