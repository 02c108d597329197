/// Holds the root widget, the focus and the run loop.
///
/// Drawing is demand-driven: a widget property change marks the screen dirty and, while `run()`
/// is running, schedules one redraw on the main actor; any number of changes in the same turn
/// share it. Nothing is drawn while nothing changes, and there is no timer.
///
/// Without a terminal (tests), drive it directly: `handle(_:)` keys, `redraw()` into a
/// `TestBackend`, `settle()` to wait for the handlers the keys started.
@MainActor
public final class Application {
    public var root: Widget {
        didSet {
            oldValue.application = nil
            root.application = self
            if let focused, focused.root !== root { focus(nil) }
            renderer.reset()
            setNeedsRedraw()
        }
    }

    public let backend: any Backend
    public let renderer: Renderer

    /// Receives errors thrown by widget handlers (e.g. to show them in a status bar).
    public var onError: ((any Error) -> Void)?
    /// The last error a handler threw.
    public private(set) var lastError: (any Error)?
    /// Keys the focused widget did not use, before the default `q` handling; return true if handled.
    public var onKey: ((Key) -> Bool)?
    /// Called after the focus moved (to nil when nothing has it).
    public var onFocusChange: ((Widget?) -> Void)?

    public private(set) var focused: Widget?
    public private(set) var needsRedraw = true
    public private(set) var isRunning = false
    public private(set) var quitRequested = false

    private var redrawScheduled = false
    private var events: AsyncStream<TerminalEvent>.Continuation?
    private var actions: [Int: Task<Void, Never>] = [:]
    private var nextActionID = 0

    public init(root: Widget, backend: any Backend) {
        self.root = root
        self.backend = backend
        renderer = Renderer(backend: backend)
        root.application = self
    }

    // MARK: Running

    /// Takes over the terminal, then reads keys and redraws until `quit()`, `q`, Ctrl-C or a
    /// termination signal. The terminal is given back before this returns or throws.
    public func run() async throws {
        precondition(!isRunning, "Application.run() is already running")
        let (stream, continuation) = AsyncStream<TerminalEvent>.makeStream()
        events = continuation
        quitRequested = false
        do {
            try backend.start(events: continuation)
        } catch {
            events = nil
            throw error
        }
        isRunning = true
        defer {
            isRunning = false
            events = nil
            backend.stop()
        }
        renderer.reset()
        redraw()
        for await event in stream {
            switch event {
            case .key(let key):
                handle(key)
                // Let the handlers this key started begin before the next key (a burst of pasted
                // or fast-typed keys): what they show at once, a prediction, is there for it.
                if !actions.isEmpty { await Task.yield() }
            case .resize: setNeedsRedraw()
            case .terminate: quit()
            }
            if quitRequested { break }
        }
    }

    /// Ends `run()` after the current event.
    public func quit() {
        quitRequested = true
        events?.finish()
    }

    /// Draws the current state now: lays out from the backend's current size, renders the tree,
    /// and writes the cells that changed.
    public func redraw() {
        needsRedraw = false
        validateFocus()
        let size = backend.size
        var frame = Buffer(width: size.width, height: size.height)
        root.draw(in: frame.area, into: &frame)
        renderer.draw(frame)
        needsRedraw = false  // focus fixes during the frame are already in it
    }

    func setNeedsRedraw() {
        needsRedraw = true
        guard isRunning, !redrawScheduled else { return }
        redrawScheduled = true
        Task { @MainActor [weak self] in
            guard let self else { return }
            self.redrawScheduled = false
            if self.isRunning && self.needsRedraw { self.redraw() }
        }
    }

    // MARK: Keys and focus

    /// Dispatches a key: Ctrl-C quits; Tab and Shift-Tab move the focus; then the focused widget
    /// and its containers, innermost first, then `onKey`; finally `q` quits unless a text input
    /// has the focus.
    public func handle(_ key: Key) {
        validateFocus()
        switch key {
        case .ctrl("c"):
            quit()
            return
        case .tab:
            focusNext()
            return
        case .backTab:
            focusPrevious()
            return
        default:
            break
        }
        var receiver = focused
        while let widget = receiver {
            if widget.handle(key) { return }
            receiver = widget.parent
        }
        if let onKey, onKey(key) { return }
        if key == .char("q") && !(focused?.capturesText ?? false) { quit() }
    }

    /// Widgets Tab visits, in order: depth first, skipping hidden subtrees and widgets the last
    /// layout left no room for.
    public var focusableWidgets: [Widget] { Self.focusableWidgets(in: root) }

    /// The widgets inside `container` (itself included) that Tab can reach, in Tab order.
    public static func focusableWidgets(in container: Widget) -> [Widget] {
        var result: [Widget] = []
        func visit(_ widget: Widget) {
            guard !widget.isHidden, !widget.isSqueezedOut else { return }
            if widget.acceptsFocus { result.append(widget) }
            for child in widget.children { visit(child) }
        }
        visit(container)
        return result
    }

    /// Moves the focus to the nearest focusable widget inside `container` in the direction of an
    /// arrow key, by where the widgets were drawn: left/right stay on the row, up/down pick the
    /// nearest row and then the closest column. Returns false when nothing lies that way.
    @discardableResult
    public func moveFocus(_ arrow: Key, within container: Widget) -> Bool {
        guard let focused else { return false }
        let from = focused.frame
        let candidates = Self.focusableWidgets(in: container).filter { $0 !== focused }
        func centerX(_ r: Rect) -> Int { r.x * 2 + r.width }
        func sameRow(_ r: Rect) -> Bool { r.y < from.maxY && from.y < r.maxY }
        let scored: [(Widget, Int, Int)] = candidates.compactMap { widget in
            let r = widget.frame
            switch arrow {
            case .left where sameRow(r) && r.maxX <= from.x: return (widget, from.x - r.maxX, 0)
            case .right where sameRow(r) && r.x >= from.maxX: return (widget, r.x - from.maxX, 0)
            case .up where r.maxY <= from.y: return (widget, from.y - r.maxY, abs(centerX(r) - centerX(from)))
            case .down where r.y >= from.maxY: return (widget, r.y - from.maxY, abs(centerX(r) - centerX(from)))
            default: return nil
            }
        }
        guard let best = scored.min(by: { ($0.1, $0.2) < ($1.1, $1.2) }) else { return false }
        focus(best.0)
        return true
    }

    /// Gives `widget` the focus (nil: nobody).
    public func focus(_ widget: Widget?) {
        guard widget !== focused else { return }
        focused?.isFocused = false
        focused = widget
        widget?.isFocused = true
        setNeedsRedraw()
        onFocusChange?(widget)
    }

    public func focusNext() {
        let list = focusableWidgets
        guard !list.isEmpty else { return focus(nil) }
        if let focused, let i = list.firstIndex(where: { $0 === focused }) {
            focus(list[(i + 1) % list.count])
        } else {
            focus(list[0])
        }
    }

    public func focusPrevious() {
        let list = focusableWidgets
        guard !list.isEmpty else { return focus(nil) }
        if let focused, let i = list.firstIndex(where: { $0 === focused }) {
            focus(list[(i + list.count - 1) % list.count])
        } else {
            focus(list[list.count - 1])
        }
    }

    /// Keeps the focus on a widget that can still take it (it may have been hidden or removed);
    /// otherwise moves it to the first one.
    private func validateFocus() {
        let list = focusableWidgets
        if let focused, list.contains(where: { $0 === focused }) { return }
        focus(list.first)
    }

    // MARK: Handlers

    /// Runs `action` in a task on the main actor and routes a thrown error to `onError`.
    public func perform(_ action: @escaping @MainActor () async throws -> Void) {
        let id = nextActionID
        nextActionID += 1
        actions[id] = Task { @MainActor [weak self] in
            do {
                try await action()
            } catch {
                self?.lastError = error
                self?.onError?(error)
            }
            self?.actions[id] = nil
        }
    }

    /// Waits until every handler started so far (and any they started) has finished.
    public func settle() async {
        while let task = actions.values.first {
            await task.value
        }
    }
}
