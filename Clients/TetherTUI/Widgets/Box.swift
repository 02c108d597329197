/// A border with an optional title around one child: "┌─ Title ───┐".
public final class Box: Widget {
    @Redraws public var title: String?
    public var child: Widget? {
        didSet {
            guard child !== oldValue else { return }
            if let oldValue { disown(oldValue) }
            if let child { adopt(child) }
        }
    }
    @Redraws public var borderStyle = Style.plain
    /// The border while a widget inside has the focus.
    @Redraws public var focusedBorderStyle = Style(fg: .cyan)
    @Redraws public var titleStyle = Style(bold: true)
    /// Blank columns between the border and the child, left and right.
    @Redraws public var padding: Int
    /// In an area narrower or lower than this, the box draws only its child: on a small terminal
    /// the border's rows and columns go to the content. nil: always draw the border.
    @Redraws public var borderlessBelow: Size?
    /// Text for the bottom border, at its right end ("─ 3–5 of 25 ─┘"). It is read after the
    /// child is drawn, so it can tell what that drawing showed (`ListView.positionText`).
    public var footer: (@MainActor () -> String?)?

    public init(title: String? = nil, padding: Int = 0, _ child: Widget? = nil) {
        self.title = title
        self.padding = padding
        self.child = child
        super.init()
        if let child { adopt(child) }
    }

    public override var children: [Widget] { child.map { [$0] } ?? [] }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        let inset = axis == .vertical ? 2 : 2 + 2 * padding
        let innerCross = max(0, cross - (axis == .vertical ? 2 + 2 * padding : 2))
        guard let child, !child.isHidden else { return inset }
        return child.preferredLength(axis, cross: innerCross).map { $0 + inset }
    }

    /// Whether the border is drawn in `area` (see `borderlessBelow`).
    public func drawsBorder(in area: Rect) -> Bool {
        guard let minimum = borderlessBelow else { return true }
        return area.width >= minimum.width && area.height >= minimum.height
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        guard drawsBorder(in: area) else {
            buffer.fill(area)
            child?.draw(in: area, into: &buffer)
            return
        }
        let border = containsFocus ? borderStyle.patched(with: focusedBorderStyle) : borderStyle
        let (x, y, maxX, maxY) = (area.x, area.y, area.maxX - 1, area.maxY - 1)
        if area.width >= 2 && area.height >= 2 {
            let horizontal = String(repeating: "─", count: area.width - 2)
            buffer.write("┌" + horizontal + "┐", x: x, y: y, style: border, limit: area.maxX)
            buffer.write("└" + horizontal + "┘", x: x, y: maxY, style: border, limit: area.maxX)
            for row in (y + 1)..<maxY {
                buffer.put("│", x: x, y: row, style: border)
                buffer.fill(Rect(x: x + 1, y: row, width: area.width - 2, height: 1))
                buffer.put("│", x: maxX, y: row, style: border)
            }
            // "┌─ Title ─┐": the title needs the two corners, a dash each side and a space each side.
            if let title, !title.isEmpty, area.width >= 7 {
                let fitted = title.truncated(toWidth: area.width - 6, ellipsis: "…")
                buffer.write(" " + fitted + " ", x: x + 2, y: y, style: border.patched(with: titleStyle), limit: maxX)
            }
        }
        let inner = area.inset(horizontal: 1 + padding, vertical: 1)
        child?.draw(in: inner, into: &buffer)
        // "─ text ─┘": a dash and a space each side, inside the corners.
        if area.height >= 2, let text = footer?(), !text.isEmpty, text.displayWidth + 6 <= area.width {
            buffer.write(" " + text + " ", x: maxX - 2 - text.displayWidth - 1, y: maxY, style: border, limit: maxX)
        }
    }
}
