/// Lays its children out in a column (`.vertical`) or a row (`.horizontal`), each with a size
/// constraint (default `.auto`: the child's preferred length, or a share of the rest if it has none).
/// Hidden children take no room. A child marked collapsible gives up its room when the fixed
/// lengths don't fit (a big clock on a small terminal), so the children after it stay visible.
public final class Stack: Widget {
    public struct Item {
        public let widget: Widget
        public var size: Constraint
        /// Dropped from the layout, first to last, while the fixed lengths don't fit.
        public var isCollapsible = false
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

    public func add(_ widget: Widget, size: Constraint = .auto, collapsible: Bool = false) {
        items.append(Item(widget: widget, size: size, isCollapsible: collapsible))
        adopt(widget)
    }

    /// Marks a child already added as collapsible (see the type's documentation).
    public func setCollapsible(_ widget: Widget, _ collapsible: Bool = true) {
        guard let i = items.firstIndex(where: { $0.widget === widget }), items[i].isCollapsible != collapsible else { return }
        items[i].isCollapsible = collapsible
        setNeedsDisplay()
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
    private func resolvedConstraints(_ items: [Item], cross: Int) -> [Constraint] {
        items.map { item in
            guard case .auto = item.size else { return item.size }
            return item.widget.preferredLength(axis, cross: cross).map { .length($0) } ?? .fill(1)
        }
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        let visible = visibleItems
        if axis == self.axis {
            var total = max(0, spacing) * max(0, visible.count - 1)
            for constraint in resolvedConstraints(visible, cross: cross) {
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
        var laidOut = visibleItems
        let cross = axis == .vertical ? area.width : area.height
        let length = axis == .vertical ? area.height : area.width
        var constraints = resolvedConstraints(laidOut, cross: cross)
        // Collapsible children give way, first to last, until the fixed lengths fit.
        while Self.fixedLength(constraints, spacing: spacing) > length,
              let drop = laidOut.firstIndex(where: \.isCollapsible) {
            laidOut[drop].widget.draw(in: Rect(x: area.x, y: area.y, width: 0, height: 0), into: &buffer)
            laidOut.remove(at: drop)
            constraints.remove(at: drop)
        }
        let rects = area.split(axis, constraints, spacing: spacing)
        for (item, rect) in zip(laidOut, rects) {
            item.widget.draw(in: rect, into: &buffer)
        }
    }

    /// Cells the fixed lengths and minimums take, with the spacing between items.
    private static func fixedLength(_ constraints: [Constraint], spacing: Int) -> Int {
        var total = max(0, spacing) * max(0, constraints.count - 1)
        for constraint in constraints {
            switch constraint {
            case .length(let n), .min(let n): total += max(0, n)
            case .fill, .auto: break
            }
        }
        return total
    }
}
