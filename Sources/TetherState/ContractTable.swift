import TetherBinding
import TetherContract
import TetherJSON

extension ActionTable {
    /// The table of a ViewModel that implements a contract: one action per contract action,
    /// its arguments decoded strictly as the contract's type, and the contract's members
    /// published when an instance is made (after `init(context:)`). `.on(...)` may still add
    /// actions the contract does not declare (the string-keyed API underneath).
    ///
    /// ```swift
    /// static let actions = ActionTable(CounterContract.binding(Counter.self))
    /// ```
    public init(_ binding: ContractBinding<Model>) {
        self.init()
        contract = binding.contract
        for action in binding.contract.actionList {
            let name = action.name
            handlers[name] = { model, args, viewer in
                do {
                    try binding.perform(model, name, args, viewer)
                } catch let error as InvalidArguments {
                    throw ActionError.invalidArgs(error.message)
                } catch let refusal as Refusal {
                    throw ActionError.refused(reason: refusal.reason, code: refusal.code, message: refusal.message)
                } catch let failure as any ContractFailure {
                    throw ActionError.refused(reason: failure.rawValue, code: failure.code, message: failure.message)
                }
            }
            func fields<Args: Decodable>(_ type: Args.Type) -> [JSONShape.Field] {
                if case .object(let fields) = JSONShape.of(Args.self) { return fields }
                return []
            }
            argumentFields[name] = fields(action.argumentsType)
        }
        installContract = { model, context in
            binding.publish(model, ContextPublication(context: context))
            for view in binding.views(model) { context.perViewer(view.name, view.project) }
        }
    }
}

/// A contract's members published into a ViewModel's document, under the same name checks as
/// `context.property`.
struct ContextPublication: PublicationTarget {
    let context: ViewModelContext

    func property<Value: Codable>(_ name: String, _ observable: Observable<Value>) {
        context.checkSharedName(name)
        context.published.adopt(name, observable)
    }

    func derived<Value: Encodable>(_ name: String, _ observable: ReadOnlyObservable<Value>) {
        context.checkSharedName(name)
        context.published.publish(name, observable)
    }

    func list<Element: Codable>(_ name: String, _ list: ObservableList<Element>) {
        context.checkSharedName(name)
        context.published.adopt(name, list)
    }

    func map<Value: Codable>(_ name: String, _ map: ObservableMap<String, Value>) {
        context.checkSharedName(name)
        context.published.adopt(name, map)
    }
}

extension ViewModelContext {
    /// What differs between the members this instance publishes (shared and per viewer) and
    /// those its contract declares; nil when they agree.
    func contractProblem(kind: String, schema: ContractSchema) -> String? {
        let shared = Set(document.state.objectValue?.keys.map { $0 } ?? [])
        if let problem = schema.publicationProblem(kind: kind, published: shared) { return problem }
        let views = perViewerValues.map(\.name).sorted()
        guard views != schema.viewNames else { return nil }
        return "kind \(kind) computes per-viewer values \(views) but its contract declares \(schema.viewNames)"
    }
}
