/// A scrolling list of lines with a selection that Up/Down/PageUp/PageDown/Home/End move; the
/// view scrolls to keep the selection visible. Enter runs `onSelect` with the selected index.
/// A list that is not selectable shows its lines only and never takes the focus.
public final class ListView: Widget {
    public typealias Handler = @MainActor (Int) async throws -> Void

    public var items: [Line] {
        didSet {
            guard items != oldValue else { return }
            clampSelection()
            setNeedsDisplay()
        }
    }
    public var selectedIndex: Int? {
        didSet {
            clampSelection()
            if selectedIndex != oldValue { setNeedsDisplay() }
        }
    }
    public var isSelectable: Bool {
        didSet {
            clampSelection()
            if isSelectable != oldValue { setNeedsDisplay() }
        }
    }
    /// With no selection, show the end of the list (a log that follows new lines).
    public var followsEnd = false {
        didSet { if followsEnd != oldValue { setNeedsDisplay() } }
    }
    public var style = Style.plain {
        didSet { if style != oldValue { setNeedsDisplay() } }
    }
    /// The selected row while the list has the focus.
    public var selectedStyle = Style(reverse: true) {
        didSet { if selectedStyle != oldValue { setNeedsDisplay() } }
    }
    /// The selected row while another widget has the focus.
    public var inactiveSelectedStyle = Style(bold: true) {
        didSet { if inactiveSelectedStyle != oldValue { setNeedsDisplay() } }
    }

    /// Index of the first visible item; kept so the selection stays in view.
    public private(set) var scrollOffset = 0

    private var onSelectHandler: Handler?

    public init(_ items: [Line] = [], isSelectable: Bool = true) {
        self.items = items
        self.isSelectable = isSelectable
        super.init()
        clampSelection()
    }

    public convenience init(items: [String], isSelectable: Bool = true) {
        self.init(items.map { Line($0) }, isSelectable: isSelectable)
    }

    @discardableResult
    public func onSelect(_ handler: @escaping Handler) -> Self {
        onSelectHandler = handler
        return self
    }

    public override var acceptsFocus: Bool { isSelectable && !items.isEmpty }

    private func clampSelection() {
        let fixed: Int?
        if !isSelectable || items.isEmpty {
            fixed = nil
        } else {
            fixed = min(max(0, selectedIndex ?? 0), items.count - 1)
        }
        if fixed != selectedIndex { selectedIndex = fixed }
    }

    private var pageSize: Int { max(1, frame.height) }

    public override func handle(_ key: Key) -> Bool {
        guard isSelectable, !items.isEmpty, let current = selectedIndex else { return false }
        let last = items.count - 1
        switch key {
        case .up: selectedIndex = max(0, current - 1)
        case .down: selectedIndex = min(last, current + 1)
        case .pageUp: selectedIndex = max(0, current - pageSize)
        case .pageDown: selectedIndex = min(last, current + pageSize)
        case .home: selectedIndex = 0
        case .end: selectedIndex = last
        case .enter:
            if let handler = onSelectHandler { perform { try await handler(current) } }
        default:
            return false
        }
        return true
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        buffer.fill(area, style: style)
        let rows = area.height
        let maxOffset = max(0, items.count - rows)
        if let selected = selectedIndex {
            if selected < scrollOffset { scrollOffset = selected }
            if selected >= scrollOffset + rows { scrollOffset = selected - rows + 1 }
        } else if followsEnd {
            scrollOffset = maxOffset
        }
        scrollOffset = min(max(0, scrollOffset), maxOffset)

        for row in 0..<min(rows, items.count - scrollOffset) {
            let index = scrollOffset + row
            let y = area.y + row
            var line = items[index].truncated(toWidth: area.width)
            line.spans = line.spans.map { Span($0.text, style: style.patched(with: $0.style)) }
            buffer.write(line, x: area.x, y: y, limit: area.maxX)
            if index == selectedIndex {
                buffer.applyStyle(isFocused ? selectedStyle : inactiveSelectedStyle, to: Rect(x: area.x, y: y, width: area.width, height: 1))
            }
        }
    }
}
