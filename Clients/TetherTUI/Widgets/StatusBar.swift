/// One row: connection state (colored), room, version, latency of the last action, and a message.
/// "● live │ room signin │ v12 │ 34 ms │ resynced from snapshot"
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

    /// The bar's content as styled spans.
    public var line: Line {
        let separator = Span(" │ ", style: Style(dim: true))
        var spans = [Span("● " + connection.text, style: Style(fg: connection.color, bold: true))]
        if let room { spans += [separator, Span("room " + room)] }
        if let version { spans += [separator, Span("v\(version)")] }
        if let latency { spans += [separator, Span(Self.format(latency))] }
        switch message {
        case .info(let text): spans += [separator, Span(text)]
        case .error(let text): spans += [separator, Span(text, style: Style(fg: .red, bold: true))]
        case nil: break
        }
        return Line(spans)
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        axis == .vertical ? 1 : nil
    }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        let row = Rect(x: area.x, y: area.y, width: area.width, height: 1)
        buffer.fill(row, style: style)
        var content = line.truncated(toWidth: area.width)
        content.spans = content.spans.map { Span($0.text, style: style.patched(with: $0.style)) }
        buffer.write(content, x: area.x, y: area.y, limit: area.maxX)
    }
}
