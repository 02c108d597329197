import TetherContract
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
    /// Whether rooms of this kind keep presence (default true; Presence.swift).
    static var hasPresence: Bool { get }
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
    /// A contract's typed refusal: `reason` is the case of its `Failure`, sent to the client
    /// beside `message` under the error `code` the case chose.
    case refused(reason: String, code: RefusalCode, message: String)

    public var description: String {
        switch self {
        case .unknownAction(let name): return "unknown action \"\(name)\""
        case .invalidArgs(let reason), .tooLarge(let reason): return reason
        case .refused(_, _, let message): return message
        }
    }
}

/// A ViewModel type's actions by name, each with typed, `Decodable` arguments.
///
/// Arguments are decoded strictly: a field the `Args` type does not read is `invalid_args`
/// naming it, so a misspelt field is reported instead of silently ignored. (An action that
/// wants free-form arguments takes `JSON`.)
public struct ActionTable<Model: ViewModel>: Sendable {
    typealias Handler = @Sendable (Model, JSON, Viewer) throws -> Void
    var handlers: [String: Handler] = [:]
    var argumentFields: [String: [JSONShape.Field]] = [:]
    /// The contract the table was built from (`init(_ binding:)`); nil for a string-keyed table.
    public internal(set) var contract: (any Contract.Type)?
    /// Publishes a new instance's contract members and per-viewer values (ContractTable.swift).
    var installContract: (@Sendable (Model, ViewModelContext) -> Void)?

    public init() {}

    /// An action whose `args` object decodes as `Args`.
    public func on<Args: Decodable & SendableMetatype>(
        _ name: String, _ argsType: Args.Type, _ handler: @escaping @Sendable (Model, Args) throws -> Void
    ) -> ActionTable {
        on(name, argsType) { model, args, _ in try handler(model, args) }
    }

    /// An action whose `args` object decodes as `Args`, with the viewer who sent it (their
    /// token's `sub` and claims, or their anonymous connection): `{ model, args, viewer in … }`.
    public func on<Args: Decodable & SendableMetatype>(
        _ name: String, _ argsType: Args.Type, _ handler: @escaping @Sendable (Model, Args, Viewer) throws -> Void
    ) -> ActionTable {
        var table = self
        table.handlers[name] = { model, json, viewer in
            let args: Args
            do {
                var decoder = JSONValueDecoder()
                decoder.rootPath = ["args"]
                decoder.rejectsUnknownKeys = true
                args = try decoder.decode(Args.self, from: json)
            } catch let error as DecodingError {
                throw ActionError.invalidArgs(error.readableDescription)
            }
            try handler(model, args, viewer)
        }
        switch JSONShape.of(Args.self) {
        case .object(let fields): table.argumentFields[name] = fields
        default: table.argumentFields[name] = []
        }
        return table
    }

    /// An action that takes no arguments: `args` must be absent or `{}`.
    public func on(_ name: String, _ handler: @escaping @Sendable (Model) throws -> Void) -> ActionTable {
        on(name) { model, _ in try handler(model) }
    }

    /// An action that takes no arguments, with the viewer who sent it.
    public func on(_ name: String, _ handler: @escaping @Sendable (Model, Viewer) throws -> Void) -> ActionTable {
        var table = self
        table.handlers[name] = { model, args, viewer in
            if case .object(let members) = args, let field = members.keys.min() {
                throw ActionError.invalidArgs("unknown field args.\(field) (\(name) takes no arguments)")
            }
            try handler(model, viewer)
        }
        table.argumentFields[name] = []
        return table
    }

    public var names: [String] { handlers.keys.sorted() }

    /// Every action with the argument fields it reads, sorted by name.
    public var descriptions: [ActionDescription] {
        names.map { ActionDescription(name: $0, arguments: argumentFields[$0] ?? []) }
    }

    func handler(named name: String) -> Handler? { handlers[name] }
}

/// An action as clients discover it: its name and the fields of its `args` object.
public struct ActionDescription: Hashable, Sendable {
    public var name: String
    public var arguments: [JSONShape.Field]

    public init(name: String, arguments: [JSONShape.Field]) {
        self.name = name
        self.arguments = arguments
    }
}

/// A ViewModel type registered under a kind name: what the server's registry holds.
public struct ViewModelKind: Sendable {
    public let name: String
    public let scope: RoomScope
    public let actionNames: [String]
    /// The actions with their argument fields, for clients discovering the kind.
    public let actions: [ActionDescription]
    /// The JSON Schema and fingerprint of the ViewModel's contract, for `describe`; nil for a
    /// ViewModel without one.
    public let contractSchema: ContractSchema?
    /// Whether its rooms keep presence: shared kinds that did not opt out.
    public let hasPresence: Bool
    /// The instance names (`KIND:INSTANCE`) that exist; a join or action naming another one is
    /// refused with `unknown_room`.
    public let instances: RoomInstances
    /// A shared room of this kind that has not changed and had no subscribers for this long is
    /// deleted (nil: kept until deleted). `tetherd --room-expiry` overrides it.
    public let expireAfter: Duration?
    /// Whether its actions' arguments may go out in `action.applied` webhooks (to endpoints that
    /// ask for them): off unless the kind says so, since arguments may carry what a room never
    /// publishes (a password).
    public private(set) var webhookArguments = false

    /// The kind with its actions' arguments allowed in webhooks.
    public func sendingArgumentsInWebhooks() -> ViewModelKind {
        var kind = self
        kind.webhookArguments = true
        return kind
    }
    /// Whether its rooms' history keeps its actions' arguments whole (else a digest of them):
    /// off unless the kind says so, for the same reason.
    public private(set) var historyArguments = false

    /// The kind with its actions' arguments kept in its rooms' history (`tether history`).
    public func keepingArgumentsInHistory() -> ViewModelKind {
        var kind = self
        kind.historyArguments = true
        return kind
    }
    /// How much of its rooms' history the store keeps (default: the server's
    /// `--history-max-patches`, history snapshots by size).
    public private(set) var historyRetention = HistoryRetention()

    /// The kind keeping at least its rooms' last `versions` steps (nil: the server's
    /// `--history-max-patches`) and every step younger than `age`, with a history snapshot
    /// every `snapshotEvery` versions, so that any kept version rebuilds from one snapshot and
    /// at most that many patches (nil: a snapshot when the patches since the last one hold the
    /// state's bytes).
    public func keepingHistory(versions: Int? = nil, for age: Duration? = nil, snapshotEvery: Int? = nil) -> ViewModelKind {
        precondition(versions.map { $0 >= 0 } ?? true && snapshotEvery.map { $0 > 0 } ?? true, "versions is 0 or more, snapshotEvery 1 or more")
        var kind = self
        kind.historyRetention = HistoryRetention(versions: versions, ageSeconds: age.map { Int($0.components.seconds) }, snapshotEvery: snapshotEvery)
        return kind
    }
    private let make: @Sendable (ViewModelContext) -> ViewModelHost

    public init<Model: ViewModel>(_ name: String, scope: RoomScope, _ type: Model.Type,
                                  instances: RoomInstances = .any, expireAfter: Duration? = nil) {
        self.init(name, scope: scope, type, instances: instances, expireAfter: expireAfter) { context in Model(context: context) }
    }

    /// A kind named after its ViewModel's contract (`Contract.kind`): `ViewModelKind(scope:
    /// .shared, Counter.self)` is "counter". The ViewModel's table must come from a contract.
    public init<Model: ViewModel>(scope: RoomScope, _ type: Model.Type, instances: RoomInstances = .any, expireAfter: Duration? = nil) {
        guard let contract = Model.actions.contract else {
            preconditionFailure("\(Model.self) implements no contract: name its kind, ViewModelKind(\"NAME\", scope: ...)")
        }
        self.init(contract.kind, scope: scope, type, instances: instances, expireAfter: expireAfter)
    }

    /// A kind whose instances `make` creates: for a ViewModel that needs more than its context,
    /// such as a service handed in by the code that registers the kind. (`Model` still conforms
    /// to `ViewModel`; its `init(context:)` is not called for this kind.)
    public init<Model: ViewModel>(_ name: String, scope: RoomScope, _ type: Model.Type,
                                  instances: RoomInstances = .any, expireAfter: Duration? = nil,
                                  make: @escaping @Sendable (ViewModelContext) -> Model) {
        self.name = name
        self.scope = scope
        self.instances = instances
        self.expireAfter = expireAfter
        self.actionNames = Model.actions.names
        self.actions = Model.actions.descriptions
        self.hasPresence = scope == .shared && Model.hasPresence
        let schema = Model.actions.contract.map { ContractSchema($0) }
        self.contractSchema = schema
        self.make = { [name] context in
            let model = make(context)
            if let install = Model.actions.installContract, let schema {
                install(model, context)
                // The one check a hand-written contract leaves to run time (a ViewModel's bug).
                if let problem = context.contractProblem(kind: name, schema: schema) { preconditionFailure(problem) }
            }
            return ViewModelHost(model: model, context: context)
        }
    }

    /// A new instance for `room` ("KIND" or "KIND:INSTANCE").
    public func instantiate(room: String) -> ViewModelHost {
        make(ViewModelContext(room: room))
    }
}

/// Which instances of a kind exist: the rooms `KIND:INSTANCE` a client may join or act on. The
/// bare `KIND` is always a room of its kind.
///
/// ```swift
/// ViewModelKind("board", scope: .shared, Board.self, instances: .only(["design", "ops"]))
/// ViewModelKind("clock", scope: .shared, Clock.self, instances: .none)
/// ```
public struct RoomInstances: Sendable, CustomStringConvertible {
    private let accepts: @Sendable (String) -> Bool
    /// Which names are accepted, for the message that refuses another one: "any name", "none",
    /// the names of `only`, or the rule given to `matching`.
    public let description: String
    /// False for `.none`: the kind's only room is the one named after it.
    public let hasInstances: Bool

    /// Any name: a room is created when first used (the server's `--max-rooms-per-kind` bounds
    /// how many are kept).
    public static let any = RoomInstances(description: "any name") { _ in true }
    /// No instances: the kind's only room is the one named after it.
    public static let none = RoomInstances(description: "none", hasInstances: false) { _ in false }

    /// Exactly these names.
    public static func only(_ names: Set<String>) -> RoomInstances {
        RoomInstances(description: names.sorted().joined(separator: ", ")) { names.contains($0) }
    }

    /// The names `accepts` returns true for; `rule` says which in a refusal ("a date, 2026-11-24").
    public static func matching(_ rule: String, _ accepts: @escaping @Sendable (String) -> Bool) -> RoomInstances {
        RoomInstances(description: rule, accepts: accepts)
    }

    private init(description: String, hasInstances: Bool = true, accepts: @escaping @Sendable (String) -> Bool) {
        self.description = description
        self.hasInstances = hasInstances
        self.accepts = accepts
    }

    /// Whether `KIND:instance` exists.
    public func contains(_ instance: String) -> Bool { accepts(instance) }
}

extension Duration {
    /// `n` days of 24 hours, for room expiry (`expireAfter: .days(30)`).
    public static func days(_ n: Int) -> Duration { .seconds(n * 86_400) }
}

/// One live ViewModel instance with its document: the room drives it through this.
public final class ViewModelHost {
    public let context: ViewModelContext
    private let model: AnyObject
    private let performAction: (String, JSON, Viewer) throws -> Void

    init<Model: ViewModel>(model: Model, context: ViewModelContext) {
        self.model = model
        self.context = context
        self.performAction = { [unowned model] name, args, viewer in
            guard let handler = Model.actions.handler(named: name) else { throw ActionError.unknownAction(name) }
            try handler(model, args, viewer)
        }
    }

    /// The hosted ViewModel, for tests and tools that drive it directly.
    public func model<Model: ViewModel>(as type: Model.Type) -> Model? { model as? Model }

    /// The current state document.
    public var state: JSON { context.document.state }

    /// Runs the action. Its changes are gathered until `takeChanges()`. An `ActionError` is the
    /// client's fault; any other error is the ViewModel's (reported as `internal`). Changes
    /// made before a handler throws still stand and are still broadcast.
    /// `viewer` is who sent it (handlers that take one see it).
    public func perform(_ name: String, args: JSON?, viewer: Viewer = .unidentified) throws {
        try performAction(name, args ?? .object([:]), viewer)
    }

    /// Every operation since the last call, in order: one turn, one patch.
    public func takeChanges() -> [PatchOperation] { context.document.takeChanges() }

    /// Ends the turn and returns its operations, unless the state would encode to more than
    /// `maxEncodedSize` bytes or the turn's patch would (the stored state is held to the same
    /// limits on its own): then the turn is taken back (the document, every published and
    /// stored value are as before it) and `ActionError.tooLarge` thrown. The turn's stored
    /// changes wait for `takeStoredChanges()`. Plain properties a ViewModel keeps for itself
    /// are not rolled back.
    public func finishTurn(maxEncodedSize: Int) throws(ActionError) -> [PatchOperation] {
        lastTurnInputs = context.inputs.finish()
        let documents = [(context.document, "its patch", "the state"), (context.stored.members.document, "its change of the stored state", "the stored state")]
        for (document, turn, whole) in documents {
            // A state already past the limit (restored after the limit was lowered) may still shrink.
            let fits = document.estimatedTurnSize <= maxEncodedSize
                && (document.turnGrowth <= 0 || document.estimatedEncodedSize <= maxEncodedSize
                    || document.measureEncodedSize() <= maxEncodedSize)
            guard fits else {
                let size = document.estimatedTurnSize > maxEncodedSize ? turn : whole
                takeBackTurn()
                throw .tooLarge("refused: \(size) would exceed the server's limit of \(maxEncodedSize) bytes (--max-state-bytes); nothing changed")
            }
        }
        return context.document.takeChanges()
    }

    /// What the last finished turn read from `context.now` and `context.random`, for its step's
    /// history.
    public private(set) var lastTurnInputs = TurnRecord()

    /// A replay: the next turn reads `inputs` instead of the clock and a new seed.
    public func replayTurnInputs(_ inputs: TurnRecord) { context.inputs.replay(inputs) }

    /// The wall clock `context.now` reads (milliseconds since 1970): the server's.
    public func setClock(_ clock: @escaping () -> Int) { context.inputs.clock = clock }

    /// The operations of the turn on the stored state (`ViewModelContext.stored`), in order:
    /// stored with the turn's version step, never sent to clients.
    public func takeStoredChanges() -> [PatchOperation] { context.stored.members.document.takeChanges() }

    /// Takes the turn back: the document, every published and every stored value are as before
    /// it (an action that fails changes nothing). Plain properties the ViewModel keeps for itself
    /// are not rolled back.
    public func takeBackTurn() {
        context.published.takeBackTurn()
        context.stored.members.takeBackTurn()
    }

    public var timers: [ViewModelTimer] { context.timers }

    /// Restores persisted state into the observables (no operations are recorded): the
    /// published document, and the stored state when there is one.
    public func restore(from state: JSON, stored: JSON? = nil) throws {
        try context.restore(from: state)
        if let stored { try context.stored.members.restore(from: stored) }
    }

    /// The stored state (`ViewModelContext.stored`): never published.
    public var storedState: JSON { context.stored.state }
}

/// How much history a kind's rooms keep (`ViewModelKind.keepingHistory`).
public struct HistoryRetention: Sendable, Equatable {
    /// At least this many last steps (nil: the server's `--history-max-patches`).
    public var versions: Int?
    /// And every step younger than this, in seconds (nil: none for its age).
    public var ageSeconds: Int?
    /// A history snapshot every this many versions (nil: by size).
    public var snapshotEvery: Int?

    public init(versions: Int? = nil, ageSeconds: Int? = nil, snapshotEvery: Int? = nil) {
        self.versions = versions
        self.ageSeconds = ageSeconds
        self.snapshotEvery = snapshotEvery
    }
}
