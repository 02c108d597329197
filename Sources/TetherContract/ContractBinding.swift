import TetherBinding
import TetherJSON

/// Where a ViewModel's published members go: the server's published document (`TetherState`
/// conforms its own), or a test's recorder.
public protocol PublicationTarget {
    /// A writable member, restored after a restart.
    func property<Value: Codable>(_ name: String, _ observable: Observable<Value>)
    /// A derived, read-only member: recomputed, never restored.
    func derived<Value: Encodable>(_ name: String, _ observable: ReadOnlyObservable<Value>)
    /// An ordered list: each change one operation at `/name/i`.
    func list<Element: Codable>(_ name: String, _ list: ObservableList<Element>)
    /// A keyed map: each change one operation at `/name/key`.
    func map<Value: Codable>(_ name: String, _ map: ObservableMap<String, Value>)
}

/// What a ViewModel may publish as a State member whose JSON is `Published`: an `Observable`
/// (writable), a `ReadOnlyObservable` (derived), an `ObservableList` or a string-keyed `ObservableMap`.
public protocol StatePublisher<Published>: SendableMetatype {
    associatedtype Published: Encodable
    func publish(as name: String, into target: some PublicationTarget)
}

extension ReadOnlyObservable: StatePublisher where Value: Codable {
    public typealias Published = Value

    public func publish(as name: String, into target: some PublicationTarget) {
        if let writable = self as? Observable<Value> {
            target.property(name, writable)
        } else {
            target.derived(name, self)
        }
    }
}

extension ObservableList: StatePublisher where Element: Codable {
    public typealias Published = [Element]
    public func publish(as name: String, into target: some PublicationTarget) { target.list(name, self) }
}

extension ObservableMap: StatePublisher where Key == String, Value: Codable {
    public typealias Published = [String: Value]
    public func publish(as name: String, into target: some PublicationTarget) { target.map(name, self) }
}

extension PublicationTarget {
    /// Publishes `publisher` as `field`: the compiler checks that its JSON is the field's type.
    public func publish<Root, Publisher: StatePublisher>(_ field: StateField<Root, Publisher.Published>, _ publisher: Publisher) {
        publisher.publish(as: field.name, into: self)
    }
}

/// A per-viewer value: its name and how it is computed for a viewer (nil: left out).
public struct ViewProjection {
    public let name: String
    public let project: (Viewer) -> JSON?

    public init(name: String, project: @escaping (Viewer) -> JSON?) {
        self.name = name
        self.project = project
    }
}

/// The server's side of a contract: how a ViewModel of type `Model` performs its actions,
/// publishes its State members and computes its Views members. `ActionTable(binding)` (in
/// TetherState) turns it into the table and publication a kind needs.
public struct ContractBinding<Model: AnyObject>: Sendable {
    public let contract: any Contract.Type
    /// Runs `action` with its `args`: throws `InvalidArguments` for arguments that do not fit
    /// (`ContractArgs.decode`), a `ContractFailure` or `Refusal` when the ViewModel refuses.
    public let perform: @Sendable (Model, _ action: String, _ args: JSON, Viewer) throws -> Void
    public let publish: @Sendable (Model, any PublicationTarget) -> Void
    public let views: @Sendable (Model) -> [ViewProjection]

    public init(contract: any Contract.Type, perform: @escaping @Sendable (Model, String, JSON, Viewer) throws -> Void,
                publish: @escaping @Sendable (Model, any PublicationTarget) -> Void,
                views: @escaping @Sendable (Model) -> [ViewProjection] = { _ in [] }) {
        self.contract = contract
        self.perform = perform
        self.publish = publish
        self.views = views
    }

    /// A binding written by hand: one handler per action of `C`, and one view per Views member.
    /// A contract action without a handler (or a handler for an action `C` lacks) stops the
    /// program here, when the table is built: completeness a macro would check at compile time.
    public init<C: Contract>(_ contract: C.Type, publish: @escaping @Sendable (Model, any PublicationTarget) -> Void,
                             views: [ContractView<Model>] = [], actions: [ContractHandler<Model>]) {
        let declared = C.actionList.map(\.name).sorted()
        let handled = actions.map(\.name).sorted()
        precondition(declared == handled, "\(C.self): the contract's actions are \(declared), the handlers \(handled)")
        let handlers = Dictionary(uniqueKeysWithValues: actions.map { ($0.name, $0.run) })
        self.init(
            contract: contract,
            perform: { model, action, args, viewer in
                guard let run = handlers[action] else { throw InvalidArguments("\(C.self) has no action \"\(action)\"") }
                try run(model, args, viewer)
            },
            publish: publish,
            views: { model in views.map { view in ViewProjection(name: view.name) { [weak model] viewer in model.flatMap { view.project($0, viewer) } } } })
    }
}

/// One action's handler in a hand-written `ContractBinding`: typed arguments, decoded strictly.
public struct ContractHandler<Model: AnyObject>: Sendable {
    public let name: String
    let run: @Sendable (Model, JSON, Viewer) throws -> Void

    public init<C: Contract, Args>(_ action: ContractAction<C, Args>, _ body: @escaping @Sendable (Model, Args, Viewer) throws -> Void) {
        let name = action.name
        self.name = name
        run = { model, json, viewer in try body(model, try ContractArgs.decode(Args.self, from: json, action: name), viewer) }
    }

    public init<C: Contract, Args>(_ action: ContractAction<C, Args>, _ body: @escaping @Sendable (Model, Args) throws -> Void) {
        self.init(action) { model, args, _ in try body(model, args) }
    }
}

/// One Views member in a hand-written `ContractBinding`: computed per viewer, nil left out.
public struct ContractView<Model: AnyObject>: Sendable {
    public let name: String
    let project: @Sendable (Model, Viewer) -> JSON?

    public init<Root, Value: Codable & Sendable>(_ field: StateField<Root, Value?>, _ project: @escaping @Sendable (Model, Viewer) -> Value?) {
        name = field.name
        self.project = { model, viewer in project(model, viewer).flatMap { try? JSONValueEncoder().encode($0) } }
    }
}
