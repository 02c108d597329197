import TetherBinding
import TetherClient
import TetherJSON
import TetherProtocol
import TetherTUI

/// What a screen works with: the room to bind to, a bag that keeps its bindings alive, its key
/// hints, and `send`, which reports an action's outcome to the shell (not to the screen).
@MainActor
final class ScreenContext {
    let client: TetherClient
    let room: RemoteRoom
    let bag = CancellableBag()
    /// Runs key-shortcut actions so that their errors and `settle()` work like widget handlers'.
    weak var application: Application?
    /// The screen's key hints, most important first; the shell adds "Tab focus" and "q quit".
    let hints = Observable<[String]>([])
    /// Hears the outcome of every action sent through `send` (its name): the ack's version, or the error.
    var onActionResult: (String, Result<Int, any Error>) -> Void = { _, _ in }
    /// Hears problems the screen words itself: a mistake in what the user typed, caught before
    /// sending anything, or a refusal `send` was given words for.
    var onProblem: (String) -> Void = { _ in }

    init(client: TetherClient, room: RemoteRoom) {
        self.client = client
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

    /// Shows `list` in `view`, one line per item, each keyed by `key`: the selection stays on its
    /// item across remote inserts, removes and snapshots, and moves to a neighbour when the item
    /// goes (`ListView.setItems(_:keys:)`). The view is refreshed once per room change, after the
    /// list has heard every item event of the patch or snapshot, so a snapshot (which rebuilds
    /// the list item by item) never loses the selection half way.
    func bindList<T>(_ list: ObservableList<T>, to view: ListView, key: @escaping (T) -> String, line: @escaping (T) -> Line) {
        let refresh = { [weak view] in
            view?.setItems(list.map(line), keys: list.map(key))
        }
        refresh()
        let stale = Flag()
        list.observeChanges { _ in stale.isSet = true }.store(in: bag)
        room.observeChanges { _ in
            guard stale.isSet else { return }
            stale.isSet = false
            refresh()
        }.store(in: bag)
    }

    // MARK: Presence

    /// "here: kim, lee" (one name per user), or nil when this client joined without presence
    /// (`tether` without `--name`), so screens look as they always did.
    func presenceLabel() -> Label? {
        guard client.options.presence != nil else { return nil }
        let label = Label("", style: Style(dim: true), alignment: .center)
        room.members.bind { [unowned room, weak label] _ in
            let names = room.presentNames
            label?.text = names.isEmpty ? "" : "here: " + names.joined(separator: ", ")
        }.store(in: bag)
        return label
    }

    /// Sends this client's presence with `extra` members (e.g. `editing`); nothing without presence.
    func announce(_ extra: [String: JSON] = [:]) {
        guard case .object(var data)? = client.options.presence else { return }
        data.merge(extra) { _, new in new }
        let room = self.room
        run { try await room.setPresence(.object(data)) }
    }

    // MARK: Acting

    /// Sends `action` to the room; its outcome goes to `onActionResult`. Returns the ack's
    /// version, nil when it failed. `explain` may put a refusal (not applied) in the screen's
    /// own words, for `onProblem`: "eggs was deleted" rather than an id the user never saw.
    /// `predict` shows the action's expected effect at once, until the server answers
    /// (`RemoteRoom.send(_:_:predict:)`).
    @discardableResult
    func send(_ action: String, _ args: JSON? = nil, predict: ((inout JSON) -> Void)? = nil,
              explain: (ProtocolError) -> String? = { _ in nil }) async -> Int? {
        do {
            let version = try await room.send(action, args, predict: predict)
            onActionResult(action, .success(version))
            return version
        } catch {
            if case .server(let refusal)? = error as? TetherClientError, refusal.applied == .no, let words = explain(refusal) {
                onProblem(words)
            } else {
                onActionResult(action, .failure(error))
            }
            return nil
        }
    }

    /// A button handler that sends `action`.
    func action(_ action: String, _ args: JSON? = nil, predict: ((inout JSON) -> Void)? = nil) -> Button.Handler {
        { [unowned self] in await self.send(action, args, predict: predict) }
    }

    /// Sends `action` from a key shortcut.
    func perform(_ action: String, _ args: JSON? = nil, predict: ((inout JSON) -> Void)? = nil) {
        run { [unowned self] in await self.send(action, args, predict: predict) }
    }

    /// Runs `work` like a widget handler (errors to the shell, awaited by `settle()`).
    func run(_ work: @escaping @MainActor () async throws -> Void) {
        if let application { application.perform(work) } else { Task { @MainActor in try? await work() } }
    }

    /// Every edit of `field` sends `action` with `{"value": text}` (one action per keystroke).
    func sendEdits(of field: TextField, as action: String, predict: ((String) -> (inout JSON) -> Void)? = nil) {
        field.onChange { [unowned self] text in await self.send(action, ["value": .string(text)], predict: predict?(text)) }
    }

    /// A text field for a shared string: edits send `action` with `{"value": text}`, and remote
    /// changes (another client typing) replace the text, except while this field's own edits are
    /// still on their way, so that typing is never undone by an older echo.
    func bindTwoWay(_ field: TextField, to path: JSONPointer, action: String) {
        let remote = value(path, as: String.self, default: "")
        let inFlight = Count()
        // What this field last sent. Keys arrive before their handlers run, so the field can hold
        // an edit not sent yet: then neither the room's value nor an answer may replace it (a
        // "." typed while "2" was on its way was lost, and "2.5" became "25").
        let sent = Text()
        func unsent(_ field: TextField) -> Bool { sent.value.map { field.text != $0 } ?? false }
        bind(remote) { [weak field] text in
            guard let field, inFlight.value == 0, !unsent(field) else { return }
            field.text = text
            sent.value = sent.value.map { _ in text }
        }
        field.onChange { [unowned self, weak field] text in
            inFlight.value += 1
            sent.value = text
            await self.send(action, ["value": .string(text)])
            inFlight.value -= 1
            guard let field, inFlight.value == 0, !unsent(field) else { return }
            field.text = remote.value
            sent.value = remote.value
        }
    }

    /// The server's description of this room's kind (its actions and their arguments).
    func describeKind() async throws -> KindDescription? {
        try await client.describe(kind: Screens.kind(of: room.name)).first
    }

    private final class Count {
        var value = 0
    }

    private final class Text {
        var value: String?
    }

    private final class Flag {
        var isSet = false
    }
}
