import TetherJSON

/// The server developer's API: a ViewModel is a Swift type with published observables and
/// action handlers. It contains no network or protocol code; the server hosts it in a room,
/// turns its observable changes into patches and routes clients' actions to it.
///
/// ```swift
/// final class Counter: ViewModel {
///     let count: Observable<Int>
///     init(context: ViewModelContext) { count = context.property("count", 0) }
///
///     struct By: Decodable { var by: Int? }
///     static let actions = ActionTable<Counter>()
///         .on("increment", By.self) { model, args in model.count.value += args.by ?? 1 }
///         .on("reset") { model in model.count.value = 0 }
/// }
/// let kind = ViewModelKind("counter", scope: .shared, Counter.self)
/// ```
///
/// Everything a ViewModel does runs on its room's serial executor: initializer, actions, timers.
public protocol ViewModel: AnyObject, SendableMetatype {
    init(context: ViewModelContext)
    static var actions: ActionTable<Self> { get }
}

/// Who shares an instance of a kind.
public enum RoomScope: String, Sendable {
    /// One state for every client of the room.
    case shared
    /// Each connection gets its own private instance that no other client sees.
    case perSession = "per-session"
}

/// An error an action handler reports to the client that sent the action.
public enum ActionError: Error, Equatable, CustomStringConvertible {
    case unknownAction(String)
    /// The arguments are missing, of the wrong type, or refer to something that doesn't exist.
    case invalidArgs(String)
    /// The action would grow the state past a limit the ViewModel sets.
    case tooLarge(String)

    public var description: String {
        switch self {
        case .unknownAction(let name): return "unknown action \"\(name)\""
        case .invalidArgs(let reason), .tooLarge(let reason): return reason
        }
    }
}

/// A ViewModel type's actions by name, each with typed, `Decodable` arguments.
public struct ActionTable<Model: ViewModel>: Sendable {
    typealias Handler = @Sendable (Model, JSON) throws -> Void
    private var handlers: [String: Handler] = [:]

    public init() {}

    /// An action whose `args` object decodes as `Args`.
    public func on<Args: Decodable & SendableMetatype>(
        _ name: String, _ argsType: Args.Type, _ handler: @escaping @Sendable (Model, Args) throws -> Void
    ) -> ActionTable {
        var table = self
        table.handlers[name] = { model, json in
            let args: Args
            do {
                var decoder = JSONValueDecoder()
                decoder.rootPath = ["args"]
                args = try decoder.decode(Args.self, from: json)
            } catch let error as DecodingError {
                throw ActionError.invalidArgs(error.readableDescription)
            }
            try handler(model, args)
        }
        return table
    }

    /// An action that takes no arguments (any `args` sent are ignored).
    public func on(_ name: String, _ handler: @escaping @Sendable (Model) throws -> Void) -> ActionTable {
        var table = self
        table.handlers[name] = { model, _ in try handler(model) }
        return table
    }

    public var names: [String] { handlers.keys.sorted() }

    func handler(named name: String) -> Handler? { handlers[name] }
}

/// A ViewModel type registered under a kind name: what the server's registry holds.
public struct ViewModelKind: Sendable {
    public let name: String
    public let scope: RoomScope
    public let actionNames: [String]
    private let make: @Sendable (ViewModelContext) -> ViewModelHost

    public init<Model: ViewModel>(_ name: String, scope: RoomScope, _ type: Model.Type) {
        self.name = name
        self.scope = scope
        self.actionNames = Model.actions.names
        self.make = { context in ViewModelHost(model: Model(context: context), context: context) }
    }

    /// A new instance for `room` ("KIND" or "KIND:INSTANCE").
    public func instantiate(room: String) -> ViewModelHost {
        make(ViewModelContext(room: room))
    }
}

/// One live ViewModel instance with its document: the room drives it through this.
public final class ViewModelHost {
    public let context: ViewModelContext
    private let model: AnyObject
    private let performAction: (String, JSON) throws -> Void

    init<Model: ViewModel>(model: Model, context: ViewModelContext) {
        self.model = model
        self.context = context
        self.performAction = { [unowned model] name, args in
            guard let handler = Model.actions.handler(named: name) else { throw ActionError.unknownAction(name) }
            try handler(model, args)
        }
    }

    /// The hosted ViewModel, for tests and tools that drive it directly.
    public func model<Model: ViewModel>(as type: Model.Type) -> Model? { model as? Model }

    /// The current state document.
    public var state: JSON { context.document.state }

    /// Runs the action. Its changes are gathered until `takeChanges()`. An `ActionError` is the
    /// client's fault; any other error is the ViewModel's (reported as `internal`). Changes
    /// made before a handler throws still stand and are still broadcast.
    public func perform(_ name: String, args: JSON?) throws {
        try performAction(name, args ?? .object([:]))
    }

    /// Every operation since the last call, in order: one turn, one patch.
    public func takeChanges() -> [PatchOperation] { context.document.takeChanges() }

    public var timers: [ViewModelTimer] { context.timers }

    /// Restores persisted state into the observables (no operations are recorded).
    public func restore(from state: JSON) throws { try context.restore(from: state) }
}

extension DecodingError {
    /// The decoder's own message ("expected number at args.by, got string"): short enough for
    /// an error to a client, and it names the member.
    public var readableDescription: String {
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            return context.debugDescription
        @unknown default:
            return "\(self)"
        }
    }
}
