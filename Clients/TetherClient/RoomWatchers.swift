import TetherBinding
import TetherProtocol
import TetherJSON

/// Re-reads one path after changes at or below it, and publishes only real changes.
@MainActor
final class PathWatcher {
    let path: JSONPointer
    private var last: JSON?
    /// Publishes the new value; returns false once the observable is gone.
    private let publish: (JSON?) -> Bool
    private(set) var isAlive = true

    init(path: JSONPointer, last: JSON?, publish: @escaping (JSON?) -> Bool) {
        self.path = path
        self.last = last
        self.publish = publish
    }

    func update(from state: JSON) {
        let value = state.value(at: path)
        guard value != last else { return }
        last = value
        isAlive = publish(value)
    }
}

/// Keeps an `ObservableList` equal to the array at a path, item by item.
@MainActor
final class ListWatcher {
    let path: JSONPointer
    private weak var list: AnyObject?
    private let reset: ([JSON]) -> Bool
    private let insert: (Int, JSON) -> Bool
    private let remove: (Int) -> Void
    private let replace: (Int, JSON) -> Bool
    /// The array's elements as JSON, to apply operations inside an element.
    private var shadow: [JSON] = []

    var isAlive: Bool { list != nil }

    init<T: Decodable>(path: JSONPointer, list: ObservableList<T>) {
        self.path = path
        self.list = list
        reset = { [weak list] elements in
            guard let list else { return false }
            let decoded = elements.compactMap { RemoteRoom.decode(T.self, $0) }
            guard decoded.count == elements.count else { return false }
            while !list.isEmpty { list.remove(at: list.count - 1) }
            for element in decoded { list.append(element) }
            return true
        }
        insert = { [weak list] index, json in
            guard let list, let element = RemoteRoom.decode(T.self, json), index <= list.count else { return false }
            list.insert(element, at: index)
            return true
        }
        remove = { [weak list] index in
            guard let list, index < list.count else { return }
            list.remove(at: index)
        }
        replace = { [weak list] index, json in
            guard let list, let element = RemoteRoom.decode(T.self, json), index < list.count else { return false }
            list[index] = element
            return true
        }
    }

    func rebuild(from value: JSON?) {
        let elements = value?.arrayValue ?? []
        guard elements != shadow else { return }
        shadow = elements
        _ = reset(elements)
    }

    /// Mirrors array operations as single-item events; anything else rebuilds the list.
    func apply(_ operations: [PatchOperation], finalState: JSON) {
        for operation in operations where touchesList(operation) {
            guard applyItemLevel(operation) else {
                shadow = []
                rebuild(from: finalState.value(at: path))
                return
            }
        }
    }

    private func touchesList(_ operation: PatchOperation) -> Bool {
        switch operation {
        case .move(let from, let to), .copy(let from, let to): return from.overlaps(path) || to.overlaps(path)
        default: return operation.path.overlaps(path)
        }
    }

    /// Applies one operation as item events; false when it can't be expressed that way.
    private func applyItemLevel(_ operation: PatchOperation) -> Bool {
        let depth = path.tokens.count
        let tokens = operation.path.tokens
        switch operation {
        case .move, .copy: return false
        default: break
        }
        // An operation at or above the list replaces it as a whole.
        guard tokens.count > depth else { return false }
        let token = tokens[depth]
        guard let index = token == "-" ? shadow.count : JSONPointer.arrayIndex(token) else { return false }
        if tokens.count > depth + 1 {
            // Inside one element: apply it to that element, then replace the element.
            guard index < shadow.count else { return false }
            var element = shadow[index]
            guard (try? element.apply(.relocated(operation, dropping: depth + 1))) != nil else { return false }
            shadow[index] = element
            return replace(index, element)
        }
        switch operation {
        case .add(_, let value):
            guard index <= shadow.count else { return false }
            shadow.insert(value, at: index)
            return insert(index, value)
        case .remove:
            guard index < shadow.count else { return false }
            shadow.remove(at: index)
            remove(index)
            return true
        case .replace(_, let value):
            guard index < shadow.count else { return false }
            shadow[index] = value
            return replace(index, value)
        default:
            return true  // test
        }
    }
}

extension PatchOperation {
    /// The same operation with the first `count` path tokens removed (to apply it to a child).
    static func relocated(_ operation: PatchOperation, dropping count: Int) -> PatchOperation {
        func cut(_ pointer: JSONPointer) -> JSONPointer { JSONPointer(tokens: Array(pointer.tokens.dropFirst(count))) }
        switch operation {
        case .add(let path, let value): return .add(path: cut(path), value: value)
        case .remove(let path): return .remove(path: cut(path))
        case .replace(let path, let value): return .replace(path: cut(path), value: value)
        case .move(let from, let path): return .move(from: cut(from), path: cut(path))
        case .copy(let from, let path): return .copy(from: cut(from), path: cut(path))
        case .test(let path, let value): return .test(path: cut(path), value: value)
        }
    }
}
