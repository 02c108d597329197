/// A scrolling list of lines with a selection that Up/Down/PageUp/PageDown/Home/End move; the
/// view scrolls to keep the selection visible. Enter runs `onSelect` with the selected index.
/// A list that is not selectable shows its lines only and never takes the focus.
///
/// The selection belongs to an item, not to a row number. Give the items keys with
/// `setItems(_:keys:)` and the selection stays on the item with the same key however the list
/// changed around it (inserts, removes, a whole new list); when that item is gone, the selection
/// moves to its neighbour: the next surviving item, or the one before it at the end of the list.
/// Without keys, `items` keeps the selected row number (clamped).
public final class ListView: Widget {
    public typealias Handler = @MainActor (Int) async throws -> Void

    /// The lines. Assigning them drops the keys and keeps the selected row number.
    public var items: [Line] {
        get { rows }
        set {
            keys = nil
            show(newValue)
        }
    }
    /// One key per item when set with `setItems(_:keys:)`; nil for plain `items`.
    public private(set) var keys: [String]?
    @Redraws public var selectedIndex: Int? {
        didSet { clampSelection() }
    }
    @Redraws public var isSelectable: Bool {
        didSet { clampSelection() }
    }
    /// With no selection, show the end of the list (a log that follows new lines).
    @Redraws public var followsEnd = false
    @Redraws public var style = Style.plain
    /// The selected row while the list has the focus.
    @Redraws public var selectedStyle = Style(reverse: true)
    /// The selected row while another widget has the focus.
    @Redraws public var inactiveSelectedStyle = Style(bold: true)

    /// Index of the first visible item; kept so the selection stays in view.
    public private(set) var scrollOffset = 0
    /// Which items the last drawing showed, "3–5 of 25", when it could not show them all; nil
    /// when every item was in view.
    public private(set) var positionText: String?

    private var rows: [Line]
    private var onSelectHandler: Handler?

    public init(_ items: [Line] = [], isSelectable: Bool = true) {
        rows = items
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

    /// The key of the selected item (nil without keys or selection).
    public var selectedKey: String? {
        guard let keys, let selectedIndex, selectedIndex < keys.count else { return nil }
        return keys[selectedIndex]
    }

    /// Selects the item with `key`; returns false, changing nothing, when there is none.
    @discardableResult
    public func select(key: String) -> Bool {
        guard let index = keys?.firstIndex(of: key) else { return false }
        selectedIndex = index
        return true
    }

    /// Replaces the items; `keys[i]` identifies `items[i]`. The selection follows its item's key,
    /// or moves to a neighbour when the item is gone (see the type's documentation).
    public func setItems(_ items: [Line], keys newKeys: [String]) {
        precondition(items.count == newKeys.count, "one key per item")
        var selection = selectedIndex
        if let oldKeys = keys, let selected = selectedIndex, selected < oldKeys.count {
            selection = Self.follow(oldKeys[selected], at: selected, from: oldKeys, to: newKeys)
        }
        keys = newKeys
        show(items, selecting: selection)
    }

    /// Where the item `key` (at `index` in `oldKeys`) is in `newKeys`; if it is gone, its nearest
    /// surviving neighbour: the first later item still there, else the last earlier one.
    static func follow(_ key: String, at index: Int, from oldKeys: [String], to newKeys: [String]) -> Int? {
        var positions: [String: Int] = [:]
        for (position, key) in newKeys.enumerated() where positions[key] == nil { positions[key] = position }
        if let position = positions[key] { return position }
        for later in oldKeys[(index + 1)...] { if let position = positions[later] { return position } }
        for earlier in oldKeys[..<index].reversed() { if let position = positions[earlier] { return position } }
        return newKeys.isEmpty ? nil : 0
    }

    private func show(_ items: [Line], selecting selection: Int?? = .none) {
        let changed = items != rows
        rows = items
        if case .some(let index) = selection { selectedIndex = index }
        clampSelection()
        if changed { setNeedsDisplay() }
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
        let shown = min(rows, items.count - scrollOffset)
        positionText = shown < items.count ? "\(scrollOffset + 1)–\(scrollOffset + shown) of \(items.count)" : nil

        for row in 0..<shown {
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
