/// Shows `content` where it fits across, else `replacement`: a row of buttons too wide for a
/// narrow terminal gives way to a line saying so, instead of losing buttons off its end. Only the
/// one shown is drawn, so Tab skips the other's widgets (`Widget.isSqueezedOut`).
public final class Fallback: Widget {
    public let content: Widget
    public let replacement: Widget

    public init(_ content: Widget, otherwise replacement: Widget) {
        self.content = content
        self.replacement = replacement
        super.init()
        adopt(content)
        adopt(replacement)
    }

    public override var children: [Widget] { [content, replacement] }

    /// Whether `content` fits `width` cells across.
    public func fits(width: Int) -> Bool {
        (content.preferredLength(.horizontal, cross: 1) ?? 0) <= width
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        switch axis {
        case .horizontal: content.preferredLength(.horizontal, cross: cross)
        case .vertical: (fits(width: cross) ? content : replacement).preferredLength(.vertical, cross: cross)
        }
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        let (shown, left) = fits(width: area.width) ? (content, replacement) : (replacement, content)
        left.draw(in: Rect(x: area.x, y: area.y, width: 0, height: 0), into: &buffer)
        shown.draw(in: area, into: &buffer)
    }
}
