/// Large block digits for a clock ("12:34:56"): five rows high, centered in the area it gets.
/// Digits, ':', '.', '-', '/' and space have glyphs. When the area is too small for them, or the
/// text has a character without one, the text is drawn plainly (bold) on the middle row instead,
/// so a small terminal still shows it; with `showsPlainFallback` off it is then not drawn at all
/// (for a screen that shows the value on another line anyway).
public final class BigText: Widget {
    @Redraws public var text: String
    @Redraws public var style: Style
    @Redraws public var alignment: Alignment
    @Redraws public var showsPlainFallback = true

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
            let glyph = glyphs[character] ?? glyphs[" "]!  // callers check `fitsBig` first
            for row in 0..<height {
                if index > 0 { rows[row] += " " }
                for pixel in glyph[row] { rows[row] += pixel == "#" ? "██" : "  " }
            }
        }
        return rows
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        switch axis {
        case .vertical: fitsBig(in: Rect(x: 0, y: 0, width: cross, height: Self.height)) ? Self.height : (showsPlainFallback ? 1 : 0)
        case .horizontal: Self.rows(for: text)[0].displayWidth
        }
    }

    /// Whether `text` is drawn in big glyphs in `area` (else as plain text).
    public func fitsBig(in area: Rect) -> Bool {
        area.height >= Self.height && Self.rows(for: text)[0].displayWidth <= area.width
            && text.allSatisfy { Self.glyphs[$0] != nil }
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        guard fitsBig(in: area) else {
            guard showsPlainFallback else { return }
            let fitted = text.truncated(toWidth: area.width, ellipsis: "…").padded(toWidth: area.width, alignment: alignment)
            buffer.write(fitted, x: area.x, y: area.y + (area.height - 1) / 2, style: style.patched(with: Style(bold: true)), limit: area.maxX)
            return
        }
        let top = area.y + (area.height - Self.height) / 2
        for (row, line) in Self.rows(for: text).enumerated() {
            buffer.write(line.padded(toWidth: area.width, alignment: alignment), x: area.x, y: top + row, style: style, limit: area.maxX)
        }
    }
}
