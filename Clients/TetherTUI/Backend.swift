/// Something that happens to the terminal while the application runs.
public enum TerminalEvent: Hashable, Sendable {
    case key(Key)
    /// The terminal changed size; the next redraw lays everything out again.
    case resize
    /// The process was asked to stop (SIGTERM, SIGINT, SIGHUP, or the input closed).
    case terminate
}

/// One cell for the backend to draw. Continuation cells are never sent: the wide character to
/// their left covers them.
public struct CellUpdate: Hashable, Sendable {
    public var x: Int
    public var y: Int
    public var cell: Cell
    public init(x: Int, y: Int, cell: Cell) {
        self.x = x
        self.y = y
        self.cell = cell
    }
}

/// Where frames end up: a real terminal (`ANSITerminalBackend`) or memory (`TestBackend`).
/// The `Renderer` decides what changed; a backend only draws what it is given.
@MainActor
public protocol Backend: AnyObject {
    var size: Size { get }
    /// Takes over the terminal and starts delivering events.
    func start(events: AsyncStream<TerminalEvent>.Continuation) throws
    /// Gives the terminal back as it was. Safe to call more than once.
    func stop()
    /// Blanks the whole screen.
    func clear()
    func draw(_ updates: [CellUpdate])
    /// Where to show the cursor once the frame is drawn; nil hides it.
    func setCursor(_ position: Point?)
    /// Ends a frame: everything drawn since the last flush becomes visible.
    func flush()
}

/// An in-memory terminal for tests. It applies cell updates the way a terminal would (a wide
/// character covers the next cell), shows its screen as text, and counts the cells each flush wrote.
@MainActor
public final class TestBackend: Backend {
    public private(set) var size: Size
    /// What the terminal shows.
    public private(set) var screen: Buffer
    /// Where the cursor is shown, nil when hidden.
    public private(set) var cursor: Point?
    /// Cells written by the last flush (0 when a frame changed nothing).
    public private(set) var lastFlushCellCount = 0
    public private(set) var totalCellsWritten = 0
    public private(set) var flushCount = 0
    public private(set) var isStarted = false

    private var cellsSinceFlush = 0
    private var pendingCursor: Point?
    private var events: AsyncStream<TerminalEvent>.Continuation?
    private var queuedEvents: [TerminalEvent] = []

    public init(width: Int, height: Int) {
        size = Size(width: width, height: height)
        screen = Buffer(width: width, height: height)
    }

    /// The screen as lines of text (each exactly `size.width` cells wide, wide characters once).
    public var lines: [String] { screen.lines }

    /// The style of the cell at (x, y).
    public func style(x: Int, y: Int) -> Style { screen[x, y].style }

    /// Changes the terminal size, as when the user resizes the window; the content is lost.
    public func resize(width: Int, height: Int) {
        size = Size(width: width, height: height)
        screen = Buffer(width: width, height: height)
        send(.resize)
    }

    /// Queues key presses for a running application (or for `run()` to find when it starts).
    public func press(_ keys: Key...) {
        for key in keys { send(.key(key)) }
    }

    /// Queues the keys that typing `input` on a terminal would produce ("\r" is Enter, "\t" Tab...).
    public func type(_ input: String) {
        var decoder = KeyDecoder()
        for key in decoder.decode(Array(input.utf8)) + decoder.flush() { send(.key(key)) }
    }

    public func send(_ event: TerminalEvent) {
        if let events {
            events.yield(event)
        } else {
            queuedEvents.append(event)
        }
    }

    public func start(events: AsyncStream<TerminalEvent>.Continuation) throws {
        self.events = events
        isStarted = true
        for event in queuedEvents { events.yield(event) }
        queuedEvents = []
    }

    public func stop() {
        events = nil
        isStarted = false
    }

    public func clear() {
        screen = Buffer(width: size.width, height: size.height)
    }

    public func draw(_ updates: [CellUpdate]) {
        for update in updates {
            let c = update.cell
            if let grapheme = c.symbol.first, c.symbol.count == 1 {
                screen.put(grapheme, x: update.x, y: update.y, style: c.style)
            }
        }
        cellsSinceFlush += updates.count
    }

    public func setCursor(_ position: Point?) {
        pendingCursor = position
    }

    public func flush() {
        cursor = pendingCursor
        screen.cursor = pendingCursor
        lastFlushCellCount = cellsSinceFlush
        totalCellsWritten += cellsSinceFlush
        cellsSinceFlush = 0
        flushCount += 1
    }
}
