/// Text, one or more lines ("\n"), optionally wrapped to the width. Lines that don't fit end in "…".
public final class Label: Widget {
    @Redraws public var text: String
    @Redraws public var style: Style
    @Redraws public var alignment: Alignment
    @Redraws public var wraps: Bool
    /// Which end of a line that does not fit gives way to "…": the end (`.tail`, the default)
    /// or the start (`.head`, for text whose end matters, like a number being typed).
    @Redraws public var truncation: Truncation

    public enum Truncation: Sendable {
        case head, tail
    }

    public init(_ text: String = "", style: Style = .plain, alignment: Alignment = .left, wraps: Bool = false, truncation: Truncation = .tail) {
        self.text = text
        self.style = style
        self.alignment = alignment
        self.wraps = wraps
        self.truncation = truncation
    }

    private func lines(width: Int) -> [String] {
        if wraps && width > 0 { return text.wrapped(toWidth: width) }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        switch axis {
        case .vertical: lines(width: cross).count
        case .horizontal: lines(width: 0).map(\.displayWidth).max() ?? 0
        }
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        buffer.fill(area, style: style)
        for (row, line) in lines(width: area.width).prefix(area.height).enumerated() {
            let cut = truncation == .tail
                ? line.truncated(toWidth: area.width, ellipsis: "…")
                : line.truncatedFromStart(toWidth: area.width, ellipsis: "…")
            let fitted = cut.padded(toWidth: area.width, alignment: alignment)
            buffer.write(fitted, x: area.x, y: area.y + row, style: style, limit: area.maxX)
        }
    }
}
