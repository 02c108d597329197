/// One terminal cell: a grapheme and its style.
public struct Cell: Hashable, Sendable {
    /// One grapheme; empty for the right half of a wide character, which the cell to its left draws.
    public var symbol: String
    public var style: Style

    public init(_ symbol: String, style: Style = .plain) {
        self.symbol = symbol
        self.style = style
    }

    public static let blank = Cell(" ")

    public var isContinuation: Bool { symbol.isEmpty }
}

/// A run of text in one style.
public struct Span: Hashable, Sendable {
    public var text: String
    public var style: Style
    public init(_ text: String, style: Style = .plain) {
        self.text = text
        self.style = style
    }
}

/// A line of styled text, for lists and status lines.
public struct Line: Hashable, Sendable, ExpressibleByStringInterpolation {
    public var spans: [Span]
    public init(_ spans: [Span]) { self.spans = spans }
    public init(_ text: String, style: Style = .plain) { spans = [Span(text, style: style)] }
    public init(stringLiteral value: String) { self.init(value) }

    public var text: String { spans.map(\.text).joined() }
    public var displayWidth: Int { spans.reduce(0) { $0 + $1.text.displayWidth } }

    /// The line cut to `width` cells, ending with `ellipsis` if something was cut; span styles are kept.
    public func truncated(toWidth width: Int, ellipsis: String = "…") -> Line {
        guard displayWidth > width else { return self }
        let budget = max(0, width - ellipsis.displayWidth)
        var kept: [Span] = []
        var used = 0
        for span in spans {
            let w = span.text.displayWidth
            if used + w <= budget {
                kept.append(span)
                used += w
            } else {
                kept.append(Span(span.text.truncated(toWidth: budget - used) + ellipsis, style: span.style))
                break
            }
        }
        return Line(kept)
    }
}

/// A grid of cells that widgets draw into. It keeps wide characters whole: a wide character always
/// occupies its cell plus a continuation cell, and overwriting either half blanks the other.
public struct Buffer: Hashable, Sendable {
    public let width: Int
    public let height: Int
    private var cells: [Cell]
    /// Where the terminal cursor should be shown after drawing; nil hides it.
    public var cursor: Point?

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = Array(repeating: .blank, count: self.width * self.height)
    }

    public var area: Rect { Rect(x: 0, y: 0, width: width, height: height) }
    public var size: Size { Size(width: width, height: height) }

    /// The cell at (x, y); a blank cell outside the buffer.
    public subscript(x: Int, y: Int) -> Cell {
        guard x >= 0, x < width, y >= 0, y < height else { return .blank }
        return cells[y * width + x]
    }

    /// Draws one grapheme at (x, y) if it fits before `limit` (exclusive, default the right edge).
    /// Returns the cells used: 0 when it is not drawn (control, zero width, or a wide character
    /// that would be cut in half).
    @discardableResult
    public mutating func put(_ grapheme: Character, x: Int, y: Int, style: Style = .plain, limit: Int? = nil) -> Int {
        let w = grapheme.displayWidth
        let end = min(limit ?? width, width)
        guard w > 0, y >= 0, y < height, x >= 0, x + w <= end else { return 0 }
        detach(x: x, y: y)
        if w == 2 { detach(x: x + 1, y: y) }
        cells[y * width + x] = Cell(String(grapheme), style: style)
        if w == 2 { cells[y * width + x + 1] = Cell("", style: style) }
        return w
    }

    /// Writes `text` from (x, y) on one line, stopping at `limit` (exclusive, default the right
    /// edge). Graphemes that are not drawn (controls, lone combining marks) are skipped.
    /// Returns the x after the last cell written.
    @discardableResult
    public mutating func write(_ text: String, x: Int, y: Int, style: Style = .plain, limit: Int? = nil) -> Int {
        var column = x
        let end = min(limit ?? width, width)
        for character in text {
            let w = character.displayWidth
            if w == 0 { continue }
            if column + w > end { break }
            column += put(character, x: column, y: y, style: style, limit: end)
        }
        return column
    }

    /// Writes the spans of `line` one after another, like `write(_:x:y:style:limit:)`.
    @discardableResult
    public mutating func write(_ line: Line, x: Int, y: Int, limit: Int? = nil) -> Int {
        var column = x
        for span in line.spans {
            column = write(span.text, x: column, y: y, style: span.style, limit: limit)
        }
        return column
    }

    /// Fills `rect` (clipped to the buffer) with `symbol` in `style`.
    public mutating func fill(_ rect: Rect, symbol: Character = " ", style: Style = .plain) {
        let r = rect.intersection(area)
        for y in r.y..<r.maxY {
            var x = r.x
            while x < r.maxX {
                let used = put(symbol, x: x, y: y, style: style, limit: r.maxX)
                x += max(1, used)
            }
        }
    }

    /// Layers `style` over the cells in `rect`, keeping their symbols (e.g. a selection highlight).
    public mutating func applyStyle(_ style: Style, to rect: Rect) {
        let r = rect.intersection(area)
        for y in r.y..<r.maxY {
            for x in r.x..<r.maxX {
                cells[y * width + x].style = cells[y * width + x].style.patched(with: style)
            }
        }
    }

    /// The text of each row, wide characters once, continuation cells left out.
    public var lines: [String] {
        (0..<height).map { y in
            var line = ""
            for x in 0..<width where !cells[y * width + x].isContinuation {
                line += cells[y * width + x].symbol
            }
            return line
        }
    }

    /// Blanks the other half of a wide character that covers (x, y), so that overwriting one half
    /// never leaves a dangling one.
    private mutating func detach(x: Int, y: Int) {
        guard x >= 0, x < width else { return }
        let index = y * width + x
        if cells[index].isContinuation {
            if x > 0 { cells[index - 1].symbol = " " }
            cells[index].symbol = " "
        } else if x + 1 < width, cells[index + 1].isContinuation {
            cells[index + 1].symbol = " "
        }
    }
}
