/// A one-line text input. The cursor moves by grapheme (a Hangul syllable is one step) and is
/// placed by display width, so it stays right after wide characters. Long text scrolls sideways.
///
/// `onChange` runs after every edit by the user (not when `text` is set from code, e.g. by a
/// binding), `onSubmit` on Enter.
public final class TextField: Widget {
    public typealias Handler = @MainActor (String) async throws -> Void

    @Redraws public var text: String {
        didSet {
            // A binding replacing the text keeps a cursor that was at the end at the end.
            let count = text.count
            if cursorIndex >= oldValue.count || cursorIndex > count { cursorIndex = count }
        }
    }
    @Redraws public var placeholder: String
    /// Shows one `maskCharacter` per character instead of the text (passwords).
    @Redraws public var isMasked: Bool
    @Redraws public var maskCharacter: Character = "•"
    @Redraws public var style = Style(dim: true, underline: true)
    @Redraws public var focusedStyle = Style(underline: true)
    @Redraws public var placeholderStyle = Style(dim: true)

    /// The cursor, in graphemes from the start of the text.
    @Redraws public var cursorIndex = 0 {
        didSet {
            // Guarded: an assignment in the didSet of a wrapped property runs the didSet again.
            let clamped = min(max(0, cursorIndex), text.count)
            if clamped != cursorIndex { cursorIndex = clamped }
        }
    }

    /// Cells from the start of the text to the cursor, as displayed (masked or not).
    public var cursorColumn: Int { displayedText.prefix(cursorIndex).displayWidth }

    private var onChangeHandler: Handler?
    private var onSubmitHandler: Handler?
    private var firstVisible = 0  // grapheme index of the first character shown; set while rendering

    public init(text: String = "", placeholder: String = "", isMasked: Bool = false) {
        self.text = text
        self.placeholder = placeholder
        self.isMasked = isMasked
        cursorIndex = text.count
    }

    /// Runs after each edit with the new text.
    @discardableResult
    public func onChange(_ handler: @escaping Handler) -> Self {
        onChangeHandler = handler
        return self
    }

    /// Runs when Enter is pressed, with the text.
    @discardableResult
    public func onSubmit(_ handler: @escaping Handler) -> Self {
        onSubmitHandler = handler
        return self
    }

    public override var acceptsFocus: Bool { true }
    public override var capturesText: Bool { true }

    private var displayedText: String {
        isMasked ? String(repeating: maskCharacter, count: text.count) : text
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        axis == .vertical ? 1 : nil
    }

    public override func handle(_ key: Key) -> Bool {
        var characters = Array(text)
        let cursor = min(cursorIndex, characters.count)
        switch key {
        case .char(let c):
            edit(String(characters[..<cursor]) + String(c), String(characters[cursor...]))
        case .backspace:
            guard cursor > 0 else { return true }
            characters.remove(at: cursor - 1)
            edit(String(characters[..<(cursor - 1)]), String(characters[(cursor - 1)...]))
        case .delete:
            guard cursor < characters.count else { return true }
            characters.remove(at: cursor)
            edit(String(characters[..<cursor]), String(characters[cursor...]))
        case .ctrl("u"):  // delete to the start
            guard cursor > 0 else { return true }
            edit("", String(characters[cursor...]))
        case .ctrl("k"):  // delete to the end
            guard cursor < characters.count else { return true }
            edit(String(characters[..<cursor]), "")
        case .left: cursorIndex = cursor - 1
        case .right: cursorIndex = cursor + 1
        case .home, .ctrl("a"): cursorIndex = 0
        case .end, .ctrl("e"): cursorIndex = characters.count
        case .enter:
            if let handler = onSubmitHandler {
                let text = self.text
                perform { try await handler(text) }
            }
        default:
            return false
        }
        return true
    }

    /// Replaces the text with `before + after` and puts the cursor between them.
    private func edit(_ before: String, _ after: String) {
        let newText = before + after
        guard newText != text else { return }
        text = newText
        // Graphemes can merge across the join (a combining mark typed after a letter), so count the result.
        cursorIndex = min(before.count, newText.count)
        if let handler = onChangeHandler {
            perform { try await handler(newText) }
        }
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        let row = Rect(x: area.x, y: area.y, width: area.width, height: 1)
        let baseStyle = isFocused ? focusedStyle : style
        buffer.fill(row, style: baseStyle)
        let characters = Array(displayedText)
        let cursor = min(cursorIndex, characters.count)

        // Scroll so that the cursor cell is inside the field, showing as much text as fits.
        firstVisible = min(firstVisible, cursor)
        while firstVisible < cursor && String(characters[firstVisible..<cursor]).displayWidth > area.width - 1 {
            firstVisible += 1
        }
        while firstVisible > 0 && String(characters[(firstVisible - 1)...]).displayWidth <= area.width - 1 {
            firstVisible -= 1
        }

        if characters.isEmpty {
            buffer.write(placeholder, x: area.x, y: area.y, style: baseStyle.patched(with: placeholderStyle), limit: area.maxX)
        } else {
            buffer.write(String(characters[firstVisible...]), x: area.x, y: area.y, style: baseStyle, limit: area.maxX)
        }
        if isFocused {
            let column = String(characters[firstVisible..<cursor]).displayWidth
            buffer.cursor = Point(x: min(area.x + column, area.maxX - 1), y: area.y)
        }
    }
}
