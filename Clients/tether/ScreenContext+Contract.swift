import TetherBinding
import TetherClient
import TetherContract
import TetherJSON
import TetherProtocol
import TetherTUI

/// A screen's room through its contract: members as typed observables, actions as typed calls
/// (`context.action(counter.increment, .init(), predict: { $0.count += 1 })`) whose outcomes go
/// to the shell as `send(_:_:)`'s do.
extension ScreenContext {
    /// The room seen through contract `C`, over the same mirror as `room` (the client keeps one
    /// `ContractRoom` per room and contract).
    func room<C: Contract>(_ contract: C.Type) -> ContractRoom<C> {
        client.room(C.self, room.name)
    }

    // MARK: Members

    /// The contract's member `field`, nil while the room's document lacks it: before the first
    /// snapshot, or from an older server. Member by member, as the screens always read the room:
    /// `ContractRoom.state` shows the contract's defaults then, or keeps its last state whole.
    func value<Root, T: Codable & Sendable>(_ field: StateField<Root, T>) -> ReadOnlyObservable<T?> {
        room.observable(Self.pointer(to: field), as: T.self)
    }

    /// An optional member: nil while it is null or absent.
    func value<Root, T: Codable & Sendable>(_ field: StateField<Root, T?>) -> ReadOnlyObservable<T?> {
        room.observable(Self.pointer(to: field), as: T.self)
    }

    /// The member `field`, `fallback` while absent.
    func value<Root, T: Codable & Sendable>(_ field: StateField<Root, T>, default fallback: T) -> ReadOnlyObservable<T> {
        room.observable(Self.pointer(to: field), as: T.self, default: fallback)
    }

    /// Shorthand for binding the member `field`.
    func bind<Root, T: Codable & Sendable>(_ field: StateField<Root, T>, default fallback: T, _ apply: @escaping (T) -> Void) {
        bind(value(field, default: fallback), apply)
    }

    /// An array member as a list with an event per item (`RemoteRoom.list`), for `bindList`.
    func list<Root, T: Codable & Sendable>(_ field: StateField<Root, [T]>) -> ObservableList<T> {
        room.list(Self.pointer(to: field), of: T.self)
    }

    private static func pointer<Root, T>(to field: StateField<Root, T>) -> JSONPointer {
        JSONPointer(tokens: [field.name])
    }

    // MARK: Acting

    /// Calls `call` with `args`; the outcome goes to `onActionResult` under the action's name.
    /// Returns the ack's version, nil when it failed. `explain` may word a refusal (not applied)
    /// for `onProblem`; it gets the contract's failure, or nil for a refusal the contract does not
    /// name. A contract's failure reaches the shell as the refusal it was. `predict` shows the
    /// expected effect at once, until the server answers.
    @discardableResult
    func send<C, Args>(_ call: ContractCall<C, Args>, _ args: Args, predict: ((inout C.State) -> Void)? = nil,
                       explain: (C.Failure?) -> String? = { _ in nil }) async -> Int? {
        let name = call.action.name
        do {
            // Nothing to predict from before the first snapshot: the contract's defaults are not the room.
            let version = try await call(args, predict: room.state == .null ? nil : predict)
            onActionResult(name, .success(version))
            return version
        } catch let failure as C.Failure {
            if let words = explain(failure) { onProblem(words) } else { onActionResult(name, .failure(refusal(failure))) }
        } catch {
            if case .server(let refusal)? = error as? TetherClientError, refusal.applied == .no, let words = explain(nil) {
                onProblem(words)
            } else {
                onActionResult(name, .failure(error))
            }
        }
        return nil
    }

    /// `failure` as the server's refusal, so the shell words it as it words any other.
    private func refusal<F: ContractFailure>(_ failure: F) -> TetherClientError {
        let code = ErrorCode(rawValue: failure.code.rawValue) ?? .invalidArgs
        return .server(ProtocolError(code, failure.message, room: room.name, applied: .no, reason: failure.rawValue))
    }

    /// A button handler that calls `call` with `args`.
    func action<C, Args>(_ call: ContractCall<C, Args>, _ args: Args, predict: ((inout C.State) -> Void)? = nil) -> Button.Handler {
        { [unowned self] in await self.send(call, args, predict: predict) }
    }

    /// A button handler that calls an action without arguments.
    func action<C>(_ call: ContractCall<C, NoArgs>, predict: ((inout C.State) -> Void)? = nil) -> Button.Handler {
        action(call, NoArgs(), predict: predict)
    }

    /// Calls `call` from a key shortcut.
    func perform<C, Args>(_ call: ContractCall<C, Args>, _ args: Args, predict: ((inout C.State) -> Void)? = nil) {
        run { [unowned self] in await self.send(call, args, predict: predict) }
    }

    /// Calls an action without arguments from a key shortcut.
    func perform<C>(_ call: ContractCall<C, NoArgs>, predict: ((inout C.State) -> Void)? = nil) {
        perform(call, NoArgs(), predict: predict)
    }

    /// Every edit of `field` calls `call` with `args(text)` (one action per keystroke).
    func sendEdits<C, Args>(of field: TextField, to call: ContractCall<C, Args>, _ args: @escaping (String) -> Args,
                            predict: ((String) -> (inout C.State) -> Void)? = nil) {
        field.onChange { [unowned self] text in await self.send(call, args(text), predict: predict?(text)) }
    }

    /// A text field for a shared string member: edits call `call` with `args(text)`, and remote
    /// changes (another client typing) replace the text, except while this field's own edits are
    /// still on their way, so that typing is never undone by an older echo.
    func bindTwoWay<Root, C, Args>(_ field: TextField, to member: StateField<Root, String>, sending call: ContractCall<C, Args>,
                                   _ args: @escaping (String) -> Args) {
        let remote = value(member, default: "")
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
            await self.send(call, args(text))
            inFlight.value -= 1
            guard let field, inFlight.value == 0, !unsent(field) else { return }
            field.text = remote.value
            sent.value = remote.value
        }
    }
}

private final class Count {
    var value = 0
}

private final class Text {
    var value: String?
}
