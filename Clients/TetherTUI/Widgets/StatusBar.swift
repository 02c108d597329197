/// One row: connection state (colored), room, version, latency of the last action, and a message.
/// "● live │ room signin │ v12 │ 34 ms │ resynced from snapshot". Where that row does not fit, the
/// message takes a second row of its own, so a narrow terminal still shows it (why it reconnects).
public final class StatusBar: Widget {
    public enum Connection: Hashable, Sendable {
        case connecting, live, reconnecting, resynced, disconnected
        case custom(String, Color)

        public var text: String {
            switch self {
            case .connecting: "connecting"
            case .live: "live"
            case .reconnecting: "reconnecting"
            case .resynced: "resynced"
            case .disconnected: "disconnected"
            case .custom(let text, _): text
            }
        }

        public var color: Color {
            switch self {
            case .connecting: .yellow
            case .live: .green
            case .reconnecting: .magenta
            case .resynced: .cyan
            case .disconnected: .red
            case .custom(_, let color): color
            }
        }
    }

    public enum Message: Hashable, Sendable {
        case info(String)
        case error(String)
    }

    @Redraws public var connection: Connection
    @Redraws public var room: String?
    @Redraws public var version: Int?
    /// How long the last action took to be acknowledged.
    @Redraws public var latency: Duration?
    @Redraws public var message: Message?
    @Redraws public var style = Style.plain

    public init(connection: Connection = .connecting, room: String? = nil) {
        self.connection = connection
        self.room = room
    }

    /// "3.4 ms" under 10 ms, "34 ms" above.
    public static func format(_ latency: Duration) -> String {
        let (seconds, attoseconds) = latency.components
        let ms = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        if ms < 10 {
            let tenths = Int((ms * 10).rounded())
            return "\(tenths / 10).\(tenths % 10) ms"
        }
        return "\(Int(ms.rounded())) ms"
    }

    private static let separator = Span(" │ ", style: Style(dim: true))

    /// The bar's content as styled spans, on one row.
    public var line: Line {
        guard let message = messageSpan else { return head }
        return Line(head.spans + [Self.separator, message])
    }

    /// Everything but the message.
    private var head: Line {
        var spans = [Span("● " + connection.text, style: Style(fg: connection.color, bold: true))]
        if let room { spans += [Self.separator, Span("room " + room)] }
        if let version { spans += [Self.separator, Span("v\(version)")] }
        if let latency { spans += [Self.separator, Span(Self.format(latency))] }
        return Line(spans)
    }

    private var messageSpan: Span? {
        switch message {
        case .info(let text): Span(text)
        case .error(let text): Span(text, style: Style(fg: .red, bold: true))
        case nil: nil
        }
    }

    /// The rows the bar takes `width` cells wide: the message on rows of its own (two at most)
    /// when it does not fit beside the rest, so a reason for reconnecting is read whole.
    public func rows(width: Int) -> [Line] {
        guard let message = messageSpan, line.displayWidth > width else { return [line] }
        let wrapped = message.text.displayWidth > width ? message.text.wrapped(toWidth: width) : [message.text]
        return [head] + wrapped.prefix(2).map { Line([Span($0, style: message.style)]) }
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        axis == .vertical ? rows(width: cross).count : nil
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        let rows = rows(width: area.width)
        let lines = area.height >= rows.count ? rows : [line]
        for (index, line) in lines.enumerated() {
            buffer.fill(Rect(x: area.x, y: area.y + index, width: area.width, height: 1), style: style)
            var content = line.truncated(toWidth: area.width)
            content.spans = content.spans.map { Span($0.text, style: style.patched(with: $0.style)) }
            buffer.write(content, x: area.x, y: area.y + index, limit: area.maxX)
        }
    }
}
