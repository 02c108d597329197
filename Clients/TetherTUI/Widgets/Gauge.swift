/// A one-row progress bar with a label to its right ("█████▌░░░░ 55%").
public final class Gauge: Widget {
    /// Progress from 0 to 1; values outside (or NaN) are clamped.
    @Redraws public var ratio: Double {
        didSet {
            let clamped = ratio.isNaN ? 0 : min(1, max(0, ratio))
            if clamped != ratio { ratio = clamped }
        }
    }
    /// Shown right of the bar; nil shows the percentage.
    @Redraws public var label: String?
    @Redraws public var style = Style(fg: .cyan)
    @Redraws public var labelStyle = Style.plain

    public init(ratio: Double = 0, label: String? = nil) {
        self.ratio = ratio.isNaN ? 0 : min(1, max(0, ratio))
        self.label = label
    }

    private static let partialBlocks = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]

    public var displayedLabel: String { label ?? "\(Int((ratio * 100 + 1e-9).rounded(.down)))%" }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        axis == .vertical ? 1 : nil
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        let text = displayedLabel
        let barWidth = area.width - text.displayWidth - 1
        guard barWidth > 0 else {
            buffer.write(text.truncated(toWidth: area.width, ellipsis: "…"), x: area.x, y: area.y, style: labelStyle, limit: area.maxX)
            return
        }
        // Eighth blocks give the bar sub-cell resolution.
        let eighths = Int((ratio * Double(barWidth * 8) + 1e-9).rounded(.down))
        let full = eighths / 8
        let partial = Self.partialBlocks[eighths % 8]
        let empty = barWidth - full - (partial.isEmpty ? 0 : 1)
        let bar = String(repeating: "█", count: full) + partial + String(repeating: "░", count: empty)
        let x = buffer.write(bar, x: area.x, y: area.y, style: style, limit: area.maxX)
        buffer.write(" " + text, x: x, y: area.y, style: labelStyle, limit: area.maxX)
    }
}
