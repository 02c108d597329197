/// One change to an `ObservableList`: always a single element, never "the whole array".
public enum ListChange<Element> {
    case insert(index: Int, element: Element)
    case remove(index: Int, element: Element)
    case replace(index: Int, old: Element, new: Element)
}

/// An ordered list whose listeners hear each insert, remove and replace by index.
/// Same threading rule as `Observable`.
public final class ObservableList<Element>: RandomAccessCollection {
    public private(set) var elements: [Element]
    private let changes = ListenerSet<ListChange<Element>>()

    public init(_ elements: [Element] = []) {
        self.elements = elements
    }

    public var startIndex: Int { elements.startIndex }
    public var endIndex: Int { elements.endIndex }

    public subscript(index: Int) -> Element {
        get { elements[index] }
        set {
            let old = elements[index]
            elements[index] = newValue
            changes.emit(.replace(index: index, old: old, new: newValue))
        }
    }

    /// Listens to element-level changes from now on.
    public func observeChanges(_ listener: @escaping (ListChange<Element>) -> Void) -> Cancellable {
        changes.add(retaining: self, listener)
    }

    /// Calls `listener` at once with the elements, then with the elements after every change.
    public func bind(_ listener: @escaping ([Element]) -> Void) -> Cancellable {
        let token = changes.add(retaining: self) { [unowned self] _ in listener(self.elements) }
        listener(elements)
        return token
    }

    public func append(_ element: Element) {
        insert(element, at: elements.count)
    }

    public func insert(_ element: Element, at index: Int) {
        elements.insert(element, at: index)
        changes.emit(.insert(index: index, element: element))
    }

    @discardableResult
    public func remove(at index: Int) -> Element {
        let element = elements.remove(at: index)
        changes.emit(.remove(index: index, element: element))
        return element
    }

    /// Removes matching elements one at a time, from the end, so each event's index is valid
    /// at the moment it is emitted.
    public func removeAll(where shouldRemove: (Element) throws -> Bool) rethrows {
        for index in elements.indices.reversed() where try shouldRemove(elements[index]) {
            remove(at: index)
        }
    }

    /// Mutates one element in place and emits one `replace`.
    public func update(at index: Int, _ mutate: (inout Element) throws -> Void) rethrows {
        var element = elements[index]
        try mutate(&element)
        self[index] = element
    }

    /// Applies a change made elsewhere (a client mirroring a remote list uses this).
    public func apply(_ change: ListChange<Element>) {
        switch change {
        case .insert(let index, let element): insert(element, at: index)
        case .remove(let index, _): remove(at: index)
        case .replace(let index, _, let new): self[index] = new
        }
    }
}

/// One change to an `ObservableMap`: a single key.
public enum MapChange<Key: Hashable, Value> {
    /// `old` is nil when the key is new.
    case set(key: Key, value: Value, old: Value?)
    case remove(key: Key, old: Value)
}

/// A keyed map whose listeners hear each set and removal by key.
/// Same threading rule as `Observable`.
public final class ObservableMap<Key: Hashable, Value> {
    public private(set) var dictionary: [Key: Value]
    private let changes = ListenerSet<MapChange<Key, Value>>()

    public init(_ dictionary: [Key: Value] = [:]) {
        self.dictionary = dictionary
    }

    public var count: Int { dictionary.count }
    public var keys: Dictionary<Key, Value>.Keys { dictionary.keys }

    /// Reading gives the value or nil; assigning nil removes the key.
    public subscript(key: Key) -> Value? {
        get { dictionary[key] }
        set {
            if let newValue {
                let old = dictionary.updateValue(newValue, forKey: key)
                changes.emit(.set(key: key, value: newValue, old: old))
            } else {
                removeValue(forKey: key)
            }
        }
    }

    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        guard let old = dictionary.removeValue(forKey: key) else { return nil }
        changes.emit(.remove(key: key, old: old))
        return old
    }

    public func observeChanges(_ listener: @escaping (MapChange<Key, Value>) -> Void) -> Cancellable {
        changes.add(retaining: self, listener)
    }

    /// Calls `listener` at once with the dictionary, then after every change.
    public func bind(_ listener: @escaping ([Key: Value]) -> Void) -> Cancellable {
        let token = changes.add(retaining: self) { [unowned self] _ in listener(self.dictionary) }
        listener(dictionary)
        return token
    }
}
