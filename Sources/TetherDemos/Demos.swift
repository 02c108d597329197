import TetherJSON
import TetherState

/// The demo ViewModels built into `tetherd` (docs/PROTOCOL.md lists them). Each is written with only the
/// public ViewModel API, so they double as its examples.
public enum Demos {
    public static let kinds: [ViewModelKind] = [
        ViewModelKind("counter", scope: .shared, Counter.self),
        ViewModelKind("clock", scope: .shared, Clock.self),
        ViewModelKind("login", scope: .perSession, Login.self),
        ViewModelKind("exchange", scope: .shared, Exchange.self),
        ViewModelKind("calculator", scope: .shared, Calculator.self),
        ViewModelKind("gallery", scope: .shared, Gallery.self),
        ViewModelKind("todo", scope: .shared, Todo.self),
        ViewModelKind("bench", scope: .shared, Bench.self),
        ViewModelKind("vote", scope: .shared, Vote.self),
    ]
}

/// Arguments of actions that take one `value`.
public struct ValueArgs<Value: Decodable & Sendable>: Decodable, Sendable {
    public var value: Value
}
