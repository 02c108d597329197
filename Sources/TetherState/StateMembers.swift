import TetherBinding
import TetherJSON

/// Named observables kept in one JSON document: each becomes a top-level member, and its
/// changes operations at that member's path only. A ViewModel has two: the published document
/// clients mirror (`ViewModelContext.property`, `list`, `map`) and the stored state it keeps
/// for itself (`ViewModelContext.stored`).
final class StateMembers {
    let document = StateDocument()
    private var slots: [Slot] = []
    private let bindings = CancellableBag()

    /// A member: how to read it for a snapshot, and how to restore it.
    private struct Slot {
        let name: String
        let current: () -> JSON
        let restore: ((JSON) throws -> Void)?
    }

    func property<Value: Codable & SendableMetatype>(_ name: String, _ initial: Value) -> Observable<Value> {
        let observable = Observable(initial)
        adopt(name, observable)
        return observable
    }

    /// Publishes an observable the ViewModel made itself (a contract's member), writable and restored.
    func adopt<Value: Codable>(_ name: String, _ observable: Observable<Value>) {
        add(name, observable, restore: { json in
            observable.value = try JSONValueDecoder().decode(Value.self, from: json)
        })
    }

    func publish<Value: Encodable>(_ name: String, _ observable: ReadOnlyObservable<Value>) {
        add(name, observable, restore: nil)
    }

    private func add<Value: Encodable>(_ name: String, _ observable: ReadOnlyObservable<Value>, restore: ((JSON) throws -> Void)?) {
        let path = JSONPointer(tokens: [name])
        declare(name, ViewModelContext.encode(observable.value))
        slots.append(Slot(name: name, current: { ViewModelContext.encode(observable.value) }, restore: restore))
        observable.observe { [document] value in
            let json = ViewModelContext.encode(value)
            guard document.state[name] != json else { return }
            document.record(.replace(path: path, value: json))
        }.store(in: bindings)
    }

    func list<Element: Codable & SendableMetatype>(_ name: String, _ initial: [Element]) -> ObservableList<Element> {
        let list = ObservableList(initial)
        adopt(name, list)
        return list
    }

    func adopt<Element: Codable>(_ name: String, _ list: ObservableList<Element>) {
        let path = JSONPointer(tokens: [name])
        declare(name, .array(list.elements.map { ViewModelContext.encode($0) }))
        slots.append(Slot(
            name: name,
            current: { .array(list.elements.map { ViewModelContext.encode($0) }) },
            restore: { json in
                let restored = try JSONValueDecoder().decode([Element].self, from: json)
                list.removeAll { _ in true }
                for element in restored { list.append(element) }
            }))
        list.observeChanges { [document] change in
            switch change {
            case .insert(let index, let element):
                document.record(.add(path: path.appending(index: index), value: ViewModelContext.encode(element)))
            case .remove(let index, _):
                document.record(.remove(path: path.appending(index: index)))
            case .replace(let index, let old, let new):
                let operations = ViewModelContext.elementChanges(at: path.appending(index: index), from: ViewModelContext.encode(old),
                                                                 to: ViewModelContext.encode(new))
                for operation in operations { document.record(operation) }
            }
        }.store(in: bindings)
    }

    func map<Value: Codable & SendableMetatype>(_ name: String, _ initial: [String: Value]) -> ObservableMap<String, Value> {
        let map = ObservableMap(initial)
        adopt(name, map)
        return map
    }

    func adopt<Value: Codable>(_ name: String, _ map: ObservableMap<String, Value>) {
        let path = JSONPointer(tokens: [name])
        declare(name, .object(map.dictionary.mapValues { ViewModelContext.encode($0) }))
        slots.append(Slot(
            name: name,
            current: { .object(map.dictionary.mapValues { ViewModelContext.encode($0) }) },
            restore: { json in
                let restored = try JSONValueDecoder().decode([String: Value].self, from: json)
                for key in Array(map.keys) where restored[key] == nil { map.removeValue(forKey: key) }
                for (key, value) in restored { map[key] = value }
            }))
        map.observeChanges { [document] change in
            switch change {
            case .set(let key, let value, let old):
                let json = ViewModelContext.encode(value)
                document.record(old == nil ? .add(path: path.appending(key), value: json) : .replace(path: path.appending(key), value: json))
            case .remove(let key, _):
                document.record(.remove(path: path.appending(key)))
            }
        }.store(in: bindings)
    }

    private func declare(_ name: String, _ value: JSON) {
        precondition(!slots.contains { $0.name == name }, "\"\(name)\" is declared twice")
        document.define(name, value)
    }

    /// The document rebuilt from the observables' current values (equal to `document.state`
    /// whenever the event-to-operation mapping is right).
    func freshSnapshot() -> JSON {
        .object(Dictionary(slots.map { ($0.name, $0.current()) }, uniquingKeysWith: { _, last in last }))
    }

    /// Sets every writable member from `state`, recording no operations. Members missing from
    /// `state` keep their initial values.
    func restore(from state: JSON) throws {
        try document.restoring {
            for slot in slots {
                guard let restore = slot.restore, let value = state[slot.name] else { continue }
                try restore(value)
            }
        }
    }

    /// Takes the current turn back: the observables are put back, and their changes bring the
    /// document back with them.
    func takeBackTurn() {
        let before = document.stateBeforeTurn()
        document.discardTurn()
        try? restore(from: before)
    }
}

/// The state a ViewModel keeps for itself (`context.stored`): observables like the published
/// ones, under names of their own, that no client ever sees. The server stores them with the
/// room, in the same step as the published changes of the turn that made them, so they
/// survive a restart, a crash and a cluster's failover exactly as the published state does;
/// an action that fails takes them back with everything else.
///
/// ```swift
/// choices = context.stored.map("choices", [String: String]())  // voter → option, secret
/// ```
///
/// Each change is stored as an operation (a map's key, a list's element), so a large map costs
/// what one entry costs to change. Stored state counts against `--max-state-bytes` on its own.
public final class StoredState {
    let members = StateMembers()

    init() {}

    /// A writable value stored as `name`.
    public func property<Value: Codable & SendableMetatype>(_ name: String, _ initial: Value) -> Observable<Value> {
        members.property(name, initial)
    }

    /// An ordered list stored as `name`.
    public func list<Element: Codable & SendableMetatype>(_ name: String, _ initial: [Element] = []) -> ObservableList<Element> {
        members.list(name, initial)
    }

    /// A keyed map stored as `name`.
    public func map<Value: Codable & SendableMetatype>(_ name: String, _ initial: [String: Value] = [:]) -> ObservableMap<String, Value> {
        members.map(name, initial)
    }

    /// The stored document: every member's value by name.
    public var state: JSON { members.document.state }

    /// The stored document rebuilt from the observables' current values (equal to `state`
    /// whenever the event-to-operation mapping is right; `TestRoom` checks it after every turn).
    public func freshSnapshot() -> JSON { members.freshSnapshot() }
}
