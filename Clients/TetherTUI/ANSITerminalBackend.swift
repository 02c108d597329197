#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation

public enum TerminalError: Error, Equatable {
    case notATerminal
    case cannotConfigure(errno: Int32)
}

/// A real terminal through termios and ANSI escape sequences: raw mode, the alternate screen,
/// UTF-8 output, size from TIOCGWINSZ, keys read on a background thread, SIGWINCH as a resize
/// event. The terminal is restored on `stop()`, on SIGTERM/SIGINT/SIGHUP and at exit.
@MainActor
public final class ANSITerminalBackend: Backend {
    private let input: Int32
    private let output: Int32
    private var reader: InputReader?
    private var signalSources: [any DispatchSourceSignal] = []

    private var out: [UInt8] = []
    private var cursorAt: Point?  // where the terminal cursor is, nil when unknown
    private var currentStyle: Style?  // nil when unknown
    private var cursorVisible = true
    private var wantedCursor: Point?
    private var inFrame = false

    public init(input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO) {
        self.input = input
        self.output = output
    }

    /// Whether both standard input and output are terminals.
    public nonisolated static var isAvailable: Bool {
        isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
    }

    public var size: Size {
        var ws = winsize()
        if ioctl(output, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 {
            return Size(width: Int(ws.ws_col), height: Int(ws.ws_row))
        }
        return Size(width: 80, height: 24)
    }

    public func start(events: AsyncStream<TerminalEvent>.Continuation) throws {
        guard isatty(input) == 1, isatty(output) == 1 else { throw TerminalError.notATerminal }
        try TerminalRestorer.shared.enter(input: input, output: output)
        signalSources = Self.watchSignals(events)
        let reader = try InputReader(fd: input, events: events)
        reader.start()
        self.reader = reader
        out = []
        cursorAt = nil
        currentStyle = nil
        cursorVisible = false  // entering hides it
    }

    public func stop() {
        reader?.stop()
        reader = nil
        for source in signalSources { source.cancel() }
        for sig in Self.handledSignals { signal(sig, SIG_DFL) }
        signalSources = []
        out = []
        TerminalRestorer.shared.restore()
    }

    public func clear() {
        beginFrame()
        emit("\u{1B}[0m\u{1B}[2J")
        currentStyle = .plain
        cursorAt = nil
    }

    public func draw(_ updates: [CellUpdate]) {
        beginFrame()
        let width = size.width
        for update in updates {
            let cell = update.cell
            let w = cell.symbol.first?.displayWidth ?? 0
            guard w > 0, update.x + w <= width else { continue }
            if w == 2 && Self.mayBeNarrowSomewhere(cell.symbol) {
                // Terminals disagree on some emoji widths: blank the second cell first so a
                // terminal that draws it narrow shows a space rather than a stale character.
                moveTo(update.x + 1, update.y)
                setStyle(cell.style)
                emit(" ")
                cursorAt = nil
            }
            moveTo(update.x, update.y)
            setStyle(cell.style)
            emit(cell.symbol)
            let next = update.x + w
            cursorAt = next < width && !Self.mayBeNarrowSomewhere(cell.symbol) ? Point(x: next, y: update.y) : nil
        }
    }

    public func setCursor(_ position: Point?) {
        wantedCursor = position
    }

    public func flush() {
        if let wanted = wantedCursor {
            moveTo(wanted.x, wanted.y)
            if !cursorVisible {
                emit("\u{1B}[?25h")
                cursorVisible = true
            }
        } else if cursorVisible {
            emit("\u{1B}[?25l")
            cursorVisible = false
        }
        if inFrame {
            emit("\u{1B}[?2026l")
            inFrame = false
        }
        guard !out.isEmpty else { return }
        TerminalRestorer.writeAll(output, out)
        out.removeAll(keepingCapacity: true)
    }

    // MARK: Output

    private func emit(_ text: String) {
        out.append(contentsOf: text.utf8)
    }

    /// Starts a synchronized update (terminals that know mode 2026 show the frame at once) and
    /// hides the cursor while cells are written.
    private func beginFrame() {
        guard !inFrame else { return }
        inFrame = true
        emit("\u{1B}[?2026h")
        if cursorVisible {
            emit("\u{1B}[?25l")
            cursorVisible = false
        }
    }

    private func moveTo(_ x: Int, _ y: Int) {
        let target = Point(x: x, y: y)
        guard cursorAt != target else { return }
        emit("\u{1B}[\(y + 1);\(x + 1)H")
        cursorAt = target
    }

    private func setStyle(_ style: Style) {
        guard currentStyle != style else { return }
        emit(Self.sgr(style))
        currentStyle = style
    }

    /// One SGR sequence that resets and sets everything, so no attribute state is carried over.
    static func sgr(_ style: Style) -> String {
        var codes = ["0"]
        if style.bold { codes.append("1") }
        if style.dim { codes.append("2") }
        if style.underline { codes.append("4") }
        if style.reverse { codes.append("7") }
        if let fg = style.fg { codes.append(colorCode(fg, base: 30)) }
        if let bg = style.bg { codes.append(colorCode(bg, base: 40)) }
        return "\u{1B}[" + codes.joined(separator: ";") + "m"
    }

    private static func colorCode(_ color: Color, base: Int) -> String {
        switch color {
        case .black: "\(base)"
        case .red: "\(base + 1)"
        case .green: "\(base + 2)"
        case .yellow: "\(base + 3)"
        case .blue: "\(base + 4)"
        case .magenta: "\(base + 5)"
        case .cyan: "\(base + 6)"
        case .white: "\(base + 7)"
        case .gray: "\(base + 60)"
        case .brightRed: "\(base + 61)"
        case .brightGreen: "\(base + 62)"
        case .brightYellow: "\(base + 63)"
        case .brightBlue: "\(base + 64)"
        case .brightMagenta: "\(base + 65)"
        case .brightCyan: "\(base + 66)"
        case .brightWhite: "\(base + 67)"
        case .indexed(let n): "\(base + 8);5;\(n)"
        case .rgb(let r, let g, let b): "\(base + 8);2;\(r);\(g);\(b)"
        }
    }

    /// Emoji sequences and symbols outside the CJK blocks: wide by Unicode, narrow in some terminals.
    private static func mayBeNarrowSomewhere(_ symbol: String) -> Bool {
        let scalars = symbol.unicodeScalars
        guard let first = scalars.first else { return false }
        return scalars.count > 1 || first.value >= 0x1F000 || (0x2300...0x2BFF).contains(first.value)
    }

    // MARK: Signals

    private nonisolated static let handledSignals: [Int32] = [SIGWINCH, SIGTERM, SIGINT, SIGHUP]

    private nonisolated static func watchSignals(_ events: AsyncStream<TerminalEvent>.Continuation) -> [any DispatchSourceSignal] {
        handledSignals.map { sig in
            signal(sig, SIG_IGN)  // dispatch sees the signal; the default action must not run
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { @Sendable in
                if sig == SIGWINCH {
                    events.yield(.resize)
                } else {
                    // Restore first, from this thread: the main actor may be busy or stuck.
                    TerminalRestorer.shared.restore()
                    events.yield(.terminate)
                }
            }
            source.resume()
            return source
        }
    }
}

/// The terminal settings to put back, shared by `stop()`, signal handlers and the exit hook.
final class TerminalRestorer: @unchecked Sendable {  // all state is behind `lock`
    static let shared = TerminalRestorer()

    private let lock = NSLock()
    private var saved: termios?
    private var input: Int32 = STDIN_FILENO
    private var output: Int32 = STDOUT_FILENO
    private var exitHookInstalled = false

    func enter(input: Int32, output: Int32) throws {
        try lock.withLock {
            var original = termios()
            guard tcgetattr(input, &original) == 0 else { throw TerminalError.cannotConfigure(errno: errno) }
            // What cfmakeraw does: no echo, no line editing, no signals from keys (Ctrl-C arrives
            // as a byte), no CR/NL translation in or out, 8-bit bytes; read returns each byte.
            var raw = original
            raw.c_iflag &= ~tcflag_t(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON)
            raw.c_oflag &= ~tcflag_t(OPOST)
            raw.c_lflag &= ~tcflag_t(ECHO | ECHONL | ICANON | ISIG | IEXTEN)
            raw.c_cflag &= ~tcflag_t(CSIZE | PARENB)
            raw.c_cflag |= tcflag_t(CS8)
            withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
            guard tcsetattr(input, TCSAFLUSH, &raw) == 0 else { throw TerminalError.cannotConfigure(errno: errno) }
            if saved == nil { saved = original }
            self.input = input
            self.output = output
            // Alternate screen, hidden cursor, no autowrap (writing the last column must not scroll).
            Self.writeAll(output, Array("\u{1B}[?1049h\u{1B}[?25l\u{1B}[?7l\u{1B}[0m\u{1B}[2J".utf8))
            if !exitHookInstalled {
                exitHookInstalled = true
                atexit { TerminalRestorer.shared.restore() }
            }
        }
    }

    /// Puts the terminal back if it was taken over; does nothing otherwise.
    func restore() {
        lock.withLock {
            guard var original = saved else { return }
            saved = nil
            Self.writeAll(output, Array("\u{1B}[?2026l\u{1B}[0m\u{1B}[?7h\u{1B}[?25h\u{1B}[?1049l".utf8))
            _ = tcsetattr(input, TCSAFLUSH, &original)
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        _ = TetherTUI.writeAll(bytes, to: fd)
    }
}

/// Writes every byte to `fd`, retrying short and interrupted writes; false when the descriptor
/// refuses (closed pipe, error). Shared by the terminal backend and the command-line output.
@discardableResult
public func writeAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
    bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0 && (errno == EINTR || errno == EAGAIN) {
                continue
            } else {
                return false
            }
        }
        return true
    }
}

/// Reads the terminal on its own thread and hands decoded keys to the application. A pipe wakes
/// the thread for `stop()`, so it never needs a timeout except to tell a lone Escape apart.
final class InputReader: @unchecked Sendable {  // fd and pipe are fixed; `lock` guards `finished`
    private let fd: Int32
    private let events: AsyncStream<TerminalEvent>.Continuation
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let lock = NSLock()
    private var finished = false

    /// How long an ESC may wait for the rest of a sequence before it counts as the Escape key.
    private static let escapeTimeoutMilliseconds: Int32 = 30

    init(fd: Int32, events: AsyncStream<TerminalEvent>.Continuation) throws {
        self.fd = fd
        self.events = events
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw TerminalError.cannotConfigure(errno: errno) }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    func start() {
        let thread = Thread { [self] in
            loop()
        }
        thread.name = "TetherTUI input"
        thread.start()
    }

    func stop() {
        lock.withLock {
            guard !finished else { return }
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    private func loop() {
        var decoder = KeyDecoder()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        reading: while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, decoder.hasPending ? Self.escapeTimeoutMilliseconds : -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if ready == 0 {
                for key in decoder.flush() { events.yield(.key(key)) }
                continue
            }
            if fds[1].revents != 0 { break }
            if fds[0].revents != 0 {
                let n = read(fd, &buffer, buffer.count)
                if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if n <= 0 {
                    // The terminal went away.
                    events.yield(.terminate)
                    break reading
                }
                for key in decoder.decode(buffer[0..<n]) { events.yield(.key(key)) }
            }
        }
        lock.withLock {
            finished = true
            close(wakeRead)
            close(wakeWrite)
        }
    }
}
