/// Text, one or more lines ("\n"), optionally wrapped to the width. Lines that don't fit end in "…".
public final class Label: Widget {
    public var text: String {
        didSet { if text != oldValue { setNeedsDisplay() } }
    }
    public var style: Style {
        didSet { if style != oldValue { setNeedsDisplay() } }
    }
    public var alignment: Alignment {
        didSet { if alignment != oldValue { setNeedsDisplay() } }
    }
    public var wraps: Bool {
        didSet { if wraps != oldValue { setNeedsDisplay() } }
    }

    public init(_ text: String = "", style: Style = .plain, alignment: Alignment = .left, wraps: Bool = false) {
        self.text = text
        self.style = style
        self.alignment = alignment
        self.wraps = wraps
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
            let fitted = line.truncated(toWidth: area.width, ellipsis: "…").padded(toWidth: area.width, alignment: alignment)
            buffer.write(fitted, x: area.x, y: area.y + row, style: style, limit: area.maxX)
        }
    }
}

/// Large block digits for a clock ("12:34:56"): five rows high. Digits, ':', '.', '-', '/' and
/// space are drawn; other characters show as blanks.
public final class BigText: Widget {
    public var text: String {
        didSet { if text != oldValue { setNeedsDisplay() } }
    }
    public var style: Style {
        didSet { if style != oldValue { setNeedsDisplay() } }
    }
    public var alignment: Alignment {
        didSet { if alignment != oldValue { setNeedsDisplay() } }
    }

    public init(_ text: String = "", style: Style = .plain, alignment: Alignment = .center) {
        self.text = text
        self.style = style
        self.alignment = alignment
    }

    public static let height = 5

    // 3x5 pixel glyphs ('#' = on); each pixel is drawn two cells wide so digits look square.
    private static let glyphs: [Character: [String]] = [
        "0": ["###", "# #", "# #", "# #", "###"],
        "1": [" # ", "## ", " # ", " # ", "###"],
        "2": ["###", "  #", "###", "#  ", "###"],
        "3": ["###", "  #", "###", "  #", "###"],
        "4": ["# #", "# #", "###", "  #", "  #"],
        "5": ["###", "#  ", "###", "  #", "###"],
        "6": ["###", "#  ", "###", "# #", "###"],
        "7": ["###", "  #", "  #", "  #", "  #"],
        "8": ["###", "# #", "###", "# #", "###"],
        "9": ["###", "# #", "###", "  #", "###"],
        ":": [" ", "#", " ", "#", " "],
        ".": [" ", " ", " ", " ", "#"],
        "-": ["   ", "   ", "###", "   ", "   "],
        "/": ["  #", "  #", " # ", "#  ", "#  "],
        " ": ["  ", "  ", "  ", "  ", "  "],
    ]

    /// The five rows of text drawn for `text`.
    public static func rows(for text: String) -> [String] {
        var rows = Array(repeating: "", count: height)
        for (index, character) in text.enumerated() {
            let glyph = glyphs[character] ?? glyphs[" "]!
            for row in 0..<height {
                if index > 0 { rows[row] += " " }
                for pixel in glyph[row] { rows[row] += pixel == "#" ? "██" : "  " }
            }
        }
        return rows
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        switch axis {
        case .vertical: Self.height
        case .horizontal: Self.rows(for: text)[0].displayWidth
        }
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        for (row, line) in Self.rows(for: text).prefix(area.height).enumerated() {
            buffer.write(line.padded(toWidth: area.width, alignment: alignment), x: area.x, y: area.y + row, style: style, limit: area.maxX)
        }
    }
}
