/// A button drawn as "[ Title ]" ("[Title]" when compact, for a row on a narrow terminal).
/// Enter or Space activates it when focused. A disabled button can
/// still take the focus (so the Tab order doesn't shift as it toggles) but does nothing.
public final class Button: Widget {
    public typealias Handler = @MainActor () async throws -> Void

    @Redraws public var title: String
    @Redraws public var isEnabled: Bool
    @Redraws public var style = Style.plain
    @Redraws public var focusedStyle = Style(bold: true, reverse: true)
    @Redraws public var disabledStyle = Style(dim: true)
    @Redraws public var isCompact = false

    private var onPressHandler: Handler?

    public init(_ title: String, isEnabled: Bool = true) {
        self.title = title
        self.isEnabled = isEnabled
    }

    @discardableResult
    public func onPress(_ handler: @escaping Handler) -> Self {
        onPressHandler = handler
        return self
    }

    /// Activates the button as Enter would. Returns false, doing nothing, when it is disabled.
    @discardableResult
    public func press() -> Bool {
        guard isEnabled else { return false }
        if let handler = onPressHandler { perform(handler) }
        return true
    }

    public override var acceptsFocus: Bool { true }

    /// The style the button is drawn in now.
    public var currentStyle: Style {
        switch (isEnabled, isFocused) {
        case (true, false): style
        case (true, true): style.patched(with: focusedStyle)
        case (false, false): style.patched(with: disabledStyle)
        case (false, true): style.patched(with: disabledStyle).patched(with: Style(underline: true))
        }
    }

    private var face: String { isCompact ? "[\(title)]" : "[ \(title) ]" }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        axis == .vertical ? 1 : face.displayWidth
    }

    public override func handle(_ key: Key) -> Bool {
        switch key {
        case .enter, .char(" "):
            press()
            return true
        default:
            return false
        }
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        let fitted = face.displayWidth > area.width ? face.truncated(toWidth: area.width, ellipsis: "…") : face
        buffer.write(fitted, x: area.x, y: area.y, style: currentStyle, limit: area.maxX)
    }
}
