import TetherBinding
import TetherClient
import TetherJSON
import TetherProtocol
import TetherTUI

/// What a screen works with: the room to bind to, a bag that keeps its bindings alive, its key
/// hints, and `send`, which reports an action's outcome to the shell (not to the screen). The
/// screens use the room through its contract (ScreenContext+Contract.swift); the string API here
/// is the runtime's, for the inspector, which knows no contract.
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
    /// `tether inspect --history`: the inspector lists who made the room's last versions.
    var showsHistory = false

    init(client: TetherClient, room: RemoteRoom) {
        self.client = client
        self.room = room
    }

    // MARK: Binding

    /// Binds for the screen's lifetime: `apply` runs now with the current value, then on every change.
    func bind<T>(_ observable: ReadOnlyObservable<T>, _ apply: @escaping (T) -> Void) {
        observable.bind(apply).store(in: bag)
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

    /// Sends `action` by name (the inspector's way); its outcome goes to `onActionResult`.
    /// Returns the ack's version, nil when it failed.
    @discardableResult
    func send(_ action: String, _ args: JSON? = nil) async -> Int? {
        do {
            let version = try await room.send(action, args)
            onActionResult(action, .success(version))
            return version
        } catch {
            onActionResult(action, .failure(error))
            return nil
        }
    }

    /// Runs `work` like a widget handler (errors to the shell, awaited by `settle()`).
    func run(_ work: @escaping @MainActor () async throws -> Void) {
        if let application { application.perform(work) } else { Task { @MainActor in try? await work() } }
    }

    /// The server's description of this room's kind (its actions and their arguments).
    func describeKind() async throws -> KindDescription? {
        try await client.describe(kind: Screens.kind(of: room.name)).first
    }

    private final class Flag {
        var isSet = false
    }
}
