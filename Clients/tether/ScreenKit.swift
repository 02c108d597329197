import Foundation
import TetherBinding
import TetherClient
import TetherJSON
import TetherTUI

/// One screen: widgets bound to a room, and the shortcut keys it understands.
///
/// A screen only creates widgets, binds them to the room's observables (through its
/// `ScreenContext`) and wires user input to actions; the shell around it does the rest.
@MainActor
protocol Screen: AnyObject {
    /// The widgets, already bound to the room.
    var body: Widget { get }
    /// One line of key help shown above the status bar.
    var hints: String { get }
    /// Keys no focused widget used; returns true when it handled the key.
    func handleKey(_ key: Key) -> Bool
}

extension Screen {
    func handleKey(_ key: Key) -> Bool { false }
}

/// The screen for a room name: by its kind, the part before ':'; the inspector for any other.
@MainActor
enum Screens {
    static func kind(of room: String) -> String {
        String(room.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }

    static func make(for context: ScreenContext) -> any Screen {
        switch kind(of: context.room.name) {
        case "counter": CounterScreen(context)
        case "clock": ClockScreen(context)
        case "login": LoginScreen(context)
        case "exchange": ExchangeScreen(context)
        case "calculator": CalculatorScreen(context)
        case "gallery": GalleryScreen(context)
        case "todo": TodoScreen(context)
        default: Inspector(context)
        }
    }
}

/// What a screen works with: the room to bind to, a bag that keeps its bindings alive, and
/// `send`, which reports an action's failure (or success) to the status bar.
@MainActor
final class ScreenContext {
    let room: RemoteRoom
    let bag = CancellableBag()
    /// Runs key-shortcut actions so that their errors and `settle()` work like widget handlers'.
    weak var application: Application?
    /// Hears the outcome of every action sent through `send`: nil on success.
    var onActionResult: ((any Error)?) -> Void = { _ in }

    init(room: RemoteRoom) {
        self.room = room
    }

    // MARK: Binding

    /// The remote value at `path`, nil while absent (before the snapshot, say).
    func value<T: Decodable>(_ path: JSONPointer, as type: T.Type) -> ReadOnlyObservable<T?> {
        room.observable(path, as: type)
    }

    /// The remote value at `path`, `fallback` while absent.
    func value<T: Decodable>(_ path: JSONPointer, as type: T.Type, default fallback: T) -> ReadOnlyObservable<T> {
        room.observable(path, as: type, default: fallback)
    }

    /// Binds for the screen's lifetime: `apply` runs now with the current value, then on every change.
    func bind<T>(_ observable: ReadOnlyObservable<T>, _ apply: @escaping (T) -> Void) {
        observable.bind(apply).store(in: bag)
    }

    /// Shorthand for binding the value at `path`.
    func bind<T: Decodable>(_ path: JSONPointer, as type: T.Type, default fallback: T, _ apply: @escaping (T) -> Void) {
        bind(value(path, as: type, default: fallback), apply)
    }

    // MARK: Acting

    /// Sends `action` to the room; its failure goes to the status bar, not to the caller.
    @discardableResult
    func send(_ action: String, _ args: JSON? = nil) async -> Bool {
        do {
            try await room.send(action, args)
            onActionResult(nil)
            return true
        } catch {
            onActionResult(error)
            return false
        }
    }

    /// A button handler that sends `action`.
    func action(_ action: String, _ args: JSON? = nil) -> Button.Handler {
        { [unowned self] in await self.send(action, args) }
    }

    /// Sends `action` from a key shortcut.
    func perform(_ action: String, _ args: JSON? = nil) {
        let work: @MainActor () async throws -> Void = { [unowned self] in await self.send(action, args) }
        if let application { application.perform(work) } else { Task { @MainActor in try? await work() } }
    }

    /// Every edit of `field` sends `action` with `{"value": text}` (one action per keystroke).
    func sendEdits(of field: TextField, as action: String) {
        field.onChange { [unowned self] text in await self.send(action, ["value": .string(text)]) }
    }

    /// A text field for a shared string: edits send `action` with `{"value": text}`, and remote
    /// changes (another client typing) replace the text, except while this field's own edits are
    /// still on their way, so that typing is never undone by an older echo.
    func bindTwoWay(_ field: TextField, to path: JSONPointer, action: String) {
        let remote = value(path, as: String.self, default: "")
        let inFlight = Counter()
        bind(remote) { [weak field] text in
            if inFlight.value == 0 { field?.text = text }
        }
        field.onChange { [unowned self, weak field] text in
            inFlight.value += 1
            await self.send(action, ["value": .string(text)])
            inFlight.value -= 1
            if inFlight.value == 0 { field?.text = remote.value }
        }
    }

    private final class Counter {
        var value = 0
    }
}

/// The frame around every screen: a titled box, a line of key help, and the status bar bound to
/// the client's connection state, the room's version, the last action's latency and errors.
@MainActor
final class Shell {
    let root: Stack
    let status = StatusBar()
    let screen: any Screen
    let context: ScreenContext
    private let client: TetherClient
    /// Connection trouble wins over an action's error; both clear when resolved.
    private var connectionNote: StatusBar.Message? { didSet { showNote() } }
    private var actionNote: StatusBar.Message? { didSet { showNote() } }

    init(client: TetherClient, context: ScreenContext) {
        self.client = client
        self.context = context
        screen = Screens.make(for: context)
        let room = context.room
        let box = Box(title: "tether · \(room.name)", padding: 1, screen.body)
        let hints = Label(screen.hints + " · Tab focus · q/Ctrl-C quit", style: Style(dim: true))
        root = Stack(.vertical, [box, hints, status])
        root.setSize(.fill(), of: box)
        status.room = room.name

        client.connectionState.bind { [weak self] state in
            guard let self else { return }
            switch state {
            case .connecting:
                status.connection = .connecting
                connectionNote = .info("connecting to \(client.options.url)")
            case .live:
                status.connection = .live
                connectionNote = nil
            case .reconnecting(let attempt, let reason):
                status.connection = .custom("reconnecting \(attempt)", .magenta)
                connectionNote = .error("retrying · " + Self.shorten(reason, url: client.options.url))
            case .resynced(let name):
                status.connection = .resynced
                connectionNote = .info("\(name) resynced from a snapshot")
            case .closed(let reason):
                status.connection = .disconnected
                connectionNote = .error(reason)
            }
        }.store(in: context.bag)
        let bar = status
        client.lastActionLatency.bind { bar.latency = $0 }.store(in: context.bag)
        room.observeChanges { [unowned room] _ in bar.version = room.version }.store(in: context.bag)
        room.lastError.observe { [weak self] error in
            if let error { self?.actionNote = .error(Output.describe(error)) }
        }.store(in: context.bag)
        context.onActionResult = { [weak self] error in
            self?.actionNote = error.map { .error(Output.describe($0)) }
        }
    }

    /// Routes keys and handler errors of `application` through the screen and the status bar.
    /// The application keeps the shell (and so the screen and its bindings) alive.
    func attach(to application: Application) {
        context.application = application
        application.onKey = { key in self.screen.handleKey(key) }
        application.onError = { [weak self] error in self?.actionNote = .error(Output.describe(error)) }
    }

    /// "cannot connect to URL: URL/: connection refused" as "cannot connect: connection refused".
    static func shorten(_ reason: String, url: String) -> String {
        var text = reason
        let bare = url.hasSuffix("/") ? String(url.dropLast()) : url
        for noise in [" to \(url)", " to \(bare)", "\(bare)/: ", "\(url): ", "\(bare): "] {
            text = text.replacingOccurrences(of: noise, with: "")
        }
        return text
    }

    private func showNote() {
        status.message = connectionNote ?? actionNote
    }
}

// MARK: - Layout helpers

/// Empty room that stretches along `axis` and takes none across it.
final class Spacer: Widget {
    let axis: Axis
    init(_ axis: Axis) {
        self.axis = axis
    }

    override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        axis == self.axis ? nil : 0
    }
}

/// `widgets` side by side, centered.
@MainActor
func centeredRow(_ widgets: [Widget], spacing: Int = 2) -> Stack {
    Stack(.horizontal, spacing: spacing, [Spacer(.horizontal)] + widgets + [Spacer(.horizontal)])
}

/// `widgets` side by side from the left.
@MainActor
func row(_ widgets: [Widget], spacing: Int = 2) -> Stack {
    Stack(.horizontal, spacing: spacing, widgets + [Spacer(.horizontal)])
}

extension String {
    /// `self` with a "(disabled)" marker when `enabled` is false: visible without colors too.
    func marked(enabled: Bool) -> String { enabled ? self : self + " (disabled)" }
}
