/// One dim row of key help: "+ / - change the count · Tab focus · q quit". The hints come in
/// order of importance; when the row is too narrow, the last ones give way first, while the
/// `pinned` hints (how to quit) always stay, at the end.
public final class HintBar: Widget {
    @Redraws public var hints: [String]
    @Redraws public var pinned: [String]
    @Redraws public var style = Style(dim: true)
    public static let separator = " · "

    public init(_ hints: [String] = [], pinned: [String] = []) {
        self.hints = hints
        self.pinned = pinned
    }

    /// The text shown in `width` cells: as many hints as fit, in order, then the pinned ones.
    public func text(width: Int) -> String {
        let tail = pinned.joined(separator: Self.separator)
        var kept: [String] = []
        for hint in hints where !hint.isEmpty {
            let candidate = (kept + [hint] + (tail.isEmpty ? [] : [tail])).joined(separator: Self.separator)
            guard candidate.displayWidth <= width else { break }
            kept.append(hint)
        }
        let text = (kept + (tail.isEmpty ? [] : [tail])).joined(separator: Self.separator)
        return text.truncated(toWidth: width, ellipsis: "…")
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        axis == .vertical ? 1 : (hints + pinned).joined(separator: Self.separator).displayWidth
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        buffer.fill(area, style: style)
        buffer.write(text(width: area.width), x: area.x, y: area.y, style: style, limit: area.maxX)
    }
}
