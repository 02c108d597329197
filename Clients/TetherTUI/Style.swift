/// A terminal color. `nil` in a `Style` means the terminal's default.
public enum Color: Hashable, Sendable {
    case black, red, green, yellow, blue, magenta, cyan, white
    /// Bright black.
    case gray
    case brightRed, brightGreen, brightYellow, brightBlue, brightMagenta, brightCyan, brightWhite
    /// One of the 256 palette colors.
    case indexed(UInt8)
    case rgb(UInt8, UInt8, UInt8)
}

/// How a cell is drawn.
public struct Style: Hashable, Sendable {
    public var fg: Color?
    public var bg: Color?
    public var bold: Bool
    public var dim: Bool
    public var underline: Bool
    public var reverse: Bool

    public init(
        fg: Color? = nil, bg: Color? = nil,
        bold: Bool = false, dim: Bool = false, underline: Bool = false, reverse: Bool = false
    ) {
        self.fg = fg
        self.bg = bg
        self.bold = bold
        self.dim = dim
        self.underline = underline
        self.reverse = reverse
    }

    public static let plain = Style()

    /// `other` layered on top of this style: its colors win where set, attributes add up.
    public func patched(with other: Style) -> Style {
        Style(
            fg: other.fg ?? fg, bg: other.bg ?? bg,
            bold: bold || other.bold, dim: dim || other.dim,
            underline: underline || other.underline, reverse: reverse || other.reverse)
    }
}
