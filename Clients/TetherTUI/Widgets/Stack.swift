/// Lays its children out in a column (`.vertical`) or a row (`.horizontal`), each with a size
/// constraint (default `.auto`: the child's preferred length, or a share of the rest if it has none).
/// Hidden children take no room.
public final class Stack: Widget {
    public struct Item {
        public let widget: Widget
        public var size: Constraint
    }

    @Redraws public var axis: Axis
    @Redraws public var spacing: Int
    /// Arrow keys that the focused widget inside did not use move the focus to the nearest
    /// focusable widget inside this stack in that direction (a keypad).
    public var arrowKeysMoveFocus = false
    public private(set) var items: [Item] = []

    public init(_ axis: Axis, spacing: Int = 0, _ children: [Widget] = []) {
        self.axis = axis
        self.spacing = spacing
        super.init()
        for child in children { add(child) }
    }

    public override var children: [Widget] { items.map(\.widget) }

    public override func handle(_ key: Key) -> Bool {
        guard arrowKeysMoveFocus, [.left, .right, .up, .down].contains(key), let application = root.application else { return false }
        return application.moveFocus(key, within: self)
    }

    public func add(_ widget: Widget, size: Constraint = .auto) {
        items.append(Item(widget: widget, size: size))
        adopt(widget)
    }

    public func remove(_ widget: Widget) {
        items.removeAll { $0.widget === widget }
        disown(widget)
    }

    public func removeAll() {
        let old = items
        items = []
        for item in old { disown(item.widget) }
    }

    /// Changes the constraint of a child already added.
    public func setSize(_ size: Constraint, of widget: Widget) {
        guard let i = items.firstIndex(where: { $0.widget === widget }), items[i].size != size else { return }
        items[i].size = size
        setNeedsDisplay()
    }

    private var visibleItems: [Item] { items.filter { !$0.widget.isHidden } }

    /// `.auto` resolved against the child's preferred length.
    private func resolvedConstraints(cross: Int) -> [Constraint] {
        visibleItems.map { item in
            guard case .auto = item.size else { return item.size }
            return item.widget.preferredLength(axis, cross: cross).map { .length($0) } ?? .fill(1)
        }
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        let visible = visibleItems
        if axis == self.axis {
            var total = max(0, spacing) * max(0, visible.count - 1)
            for constraint in resolvedConstraints(cross: cross) {
                guard case .length(let n) = constraint else { return nil }
                total += n
            }
            return total
        }
        var widest = 0
        for item in visible {
            guard let length = item.widget.preferredLength(axis, cross: cross) else { return nil }
            widest = max(widest, length)
        }
        return widest
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        let visible = visibleItems
        let cross = axis == .vertical ? area.width : area.height
        let rects = area.split(axis, resolvedConstraints(cross: cross), spacing: spacing)
        for (item, rect) in zip(visible, rects) {
            item.widget.draw(in: rect, into: &buffer)
        }
    }
}
