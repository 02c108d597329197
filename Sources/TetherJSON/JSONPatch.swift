/// JSON Patch documents to and from JSON, and the compact writer the server's hot path uses.
public enum JSONPatch {
    /// Decodes a patch document: an array of operation objects. Unknown members are ignored.
    public static func decode(_ json: JSON) throws(JSONPatchError) -> [PatchOperation] {
        guard case .array(let items) = json else { throw .invalidPatch("a patch is an array of operations, got \(json.typeName)") }
        var operations: [PatchOperation] = []
        operations.reserveCapacity(items.count)
        for item in items { operations.append(try PatchOperation(json: item)) }
        return operations
    }

    public static func encode(_ operations: [PatchOperation]) -> JSON {
        .array(operations.map(\.json))
    }

    /// Writes the operations comma-separated, without the enclosing brackets, so encoded runs
    /// can be concatenated into one merged patch.
    public static func writeOperations(_ operations: [PatchOperation], to buffer: inout [UInt8]) {
        for (i, operation) in operations.enumerated() {
            if i > 0 { buffer.append(UInt8(ascii: ",")) }
            operation.write(to: &buffer)
        }
    }
}

public enum JSONPatchError: Error, Equatable, CustomStringConvertible {
    /// The patch document itself is malformed (missing member, unknown op, bad pointer).
    case invalidPatch(String)
    case pathNotFound(JSONPointer)
    case invalidArrayIndex(JSONPointer)
    /// The parent of the target is a scalar.
    case notAContainer(JSONPointer)
    case testFailed(JSONPointer)
    case moveIntoOwnChild(from: JSONPointer, path: JSONPointer)
    case cannotRemoveRoot

    public var description: String {
        switch self {
        case .invalidPatch(let reason): return "invalid patch: \(reason)"
        case .pathNotFound(let p): return "path \"\(p)\" does not exist"
        case .invalidArrayIndex(let p): return "path \"\(p)\" has an invalid or out-of-range array index"
        case .notAContainer(let p): return "path \"\(p)\" goes through a value that is not an object or array"
        case .testFailed(let p): return "test failed at \"\(p)\""
        case .moveIntoOwnChild(let from, let path): return "cannot move \"\(from)\" into its own child \"\(path)\""
        case .cannotRemoveRoot: return "cannot remove the whole document"
        }
    }
}

// MARK: - Apply

extension JSON {
    /// Applies `operations` in order, in place. Atomic: when one fails, the ones before it are
    /// undone and `self` is left as it was.
    public mutating func apply(_ operations: [PatchOperation]) throws(JSONPatchError) {
        var undo: [PatchOperation] = []
        undo.reserveCapacity(operations.count)
        do {
            for operation in operations { try apply(operation, recordingInverseInto: &undo) }
        } catch {
            var ignored: [PatchOperation] = []
            for inverse in undo.reversed() { try? apply(inverse, recordingInverseInto: &ignored) }
            throw error
        }
    }

    /// Applies one operation in place. On error `self` is unchanged.
    public mutating func apply(_ operation: PatchOperation) throws(JSONPatchError) {
        var ignored: [PatchOperation] = []
        try apply(operation, recordingInverseInto: &ignored)
    }

    /// The value at `pointer`, or nil when it does not exist.
    /// Sets the value at `pointer`: an object's member is added or replaced, an array's element
    /// replaced. Nothing happens where the parent is missing (a client's prediction about a state
    /// it has not got yet changes nothing).
    public mutating func set(_ pointer: JSONPointer, to value: JSON) {
        guard let last = pointer.tokens.last else { self = value; return }
        switch self.value(at: pointer.parent) {
        case .object?: try? apply(.add(path: pointer, value: value))
        case .array(let array)?:
            if let index = JSONPointer.arrayIndex(last), index < array.count { try? apply(.replace(path: pointer, value: value)) }
        default: break
        }
    }

    public func value(at pointer: JSONPointer) -> JSON? {
        var current = self
        for token in pointer.tokens {
            switch current {
            case .object(let object):
                guard let next = object[token] else { return nil }
                current = next
            case .array(let array):
                guard let index = JSONPointer.arrayIndex(token), index < array.count else { return nil }
                current = array[index]
            default:
                return nil
            }
        }
        return current
    }

    /// Applies one operation in place and appends the operations that undo it to `undo`
    /// (applied in reverse order, they restore the document). On error `self` is unchanged.
    public mutating func apply(_ operation: PatchOperation, recordingInverseInto undo: inout [PatchOperation]) throws(JSONPatchError) {
        switch operation {
        case .add(let path, let value):
            undo.append(try add(value, at: path))
        case .remove(let path):
            let removed = try remove(at: path)
            undo.append(.add(path: path, value: removed))
        case .replace(let path, let value):
            if path.isRoot { undo.append(.replace(path: path, value: self)); self = value; return }
            let old = try withParent(of: path) { (parent: inout JSON, token: String) throws(JSONPatchError) -> JSON in
                if var object = parent.takeObject() {
                    defer { parent = .object(object) }
                    guard let old = object.updateValue(value, forKey: token) else {
                        object[token] = nil
                        throw .pathNotFound(path)
                    }
                    return old
                }
                if var array = parent.takeArray() {
                    defer { parent = .array(array) }
                    guard let index = JSONPointer.arrayIndex(token), index < array.count else { throw .invalidArrayIndex(path) }
                    let old = array[index]
                    array[index] = value
                    return old
                }
                throw .notAContainer(path)
            }
            undo.append(.replace(path: path, value: old))
        case .move(let from, let path):
            if from == path { return }
            if from.isPrefix(of: path) { throw .moveIntoOwnChild(from: from, path: path) }
            let value = try remove(at: from)
            undo.append(.add(path: from, value: value))
            undo.append(try add(value, at: path))
        case .copy(let from, let path):
            guard let value = value(at: from) else { throw .pathNotFound(from) }
            undo.append(try add(value, at: path))
        case .test(let path, let expected):
            guard let actual = value(at: path) else { throw .pathNotFound(path) }
            guard actual == expected else { throw .testFailed(path) }
        }
    }

    /// Adds per RFC 6902 and returns the operation that undoes it.
    private mutating func add(_ value: JSON, at path: JSONPointer) throws(JSONPatchError) -> PatchOperation {
        if path.isRoot {
            let old = self
            self = value
            return .replace(path: path, value: old)
        }
        return try withParent(of: path) { (parent: inout JSON, token: String) throws(JSONPatchError) -> PatchOperation in
            if var object = parent.takeObject() {
                defer { parent = .object(object) }
                let old = object.updateValue(value, forKey: token)
                return old.map { .replace(path: path, value: $0) } ?? .remove(path: path)
            }
            if var array = parent.takeArray() {
                defer { parent = .array(array) }
                let index: Int
                if token == "-" {
                    index = array.count
                } else {
                    guard let parsed = JSONPointer.arrayIndex(token), parsed <= array.count else { throw .invalidArrayIndex(path) }
                    index = parsed
                }
                array.insert(value, at: index)
                return .remove(path: path.parent.appending(index: index))
            }
            throw .notAContainer(path)
        }
    }

    private mutating func remove(at path: JSONPointer) throws(JSONPatchError) -> JSON {
        if path.isRoot { throw .cannotRemoveRoot }
        return try withParent(of: path) { (parent: inout JSON, token: String) throws(JSONPatchError) -> JSON in
            if var object = parent.takeObject() {
                defer { parent = .object(object) }
                guard let removed = object.removeValue(forKey: token) else { throw .pathNotFound(path) }
                return removed
            }
            if var array = parent.takeArray() {
                defer { parent = .array(array) }
                guard let index = JSONPointer.arrayIndex(token), index < array.count else { throw .invalidArrayIndex(path) }
                return array.remove(at: index)
            }
            throw .notAContainer(path)
        }
    }

    /// Walks to the container holding `path`'s last token and runs `body` on it in place.
    /// Each level is detached from its parent while edited, so no copy-on-write copies happen.
    private mutating func withParent<R>(
        of path: JSONPointer, depth: Int = 0,
        _ body: (inout JSON, String) throws(JSONPatchError) -> R
    ) throws(JSONPatchError) -> R {
        let tokens = path.tokens
        if depth == tokens.count - 1 { return try body(&self, tokens[depth]) }
        let token = tokens[depth]
        if var object = takeObject() {
            defer { self = .object(object) }
            guard let index = object.index(forKey: token) else { throw .pathNotFound(path) }
            return try object.values[index].withParent(of: path, depth: depth + 1, body)
        }
        if var array = takeArray() {
            defer { self = .array(array) }
            guard let index = JSONPointer.arrayIndex(token), index < array.count else { throw .pathNotFound(path) }
            return try array[index].withParent(of: path, depth: depth + 1, body)
        }
        throw .pathNotFound(path)
    }
}
