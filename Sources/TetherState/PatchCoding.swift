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

extension PatchOperation {
    public init(json: JSON) throws(JSONPatchError) {
        guard case .object(let object) = json else { throw .invalidPatch("an operation is an object, got \(json.typeName)") }
        guard case .string(let op)? = object["op"] else { throw .invalidPatch("operation without a string \"op\"") }
        func pointer(_ key: String) throws(JSONPatchError) -> JSONPointer {
            guard case .string(let text)? = object[key] else { throw .invalidPatch("\"\(op)\" needs a string \"\(key)\"") }
            do { return try JSONPointer(parsing: text) } catch { throw .invalidPatch(error.description) }
        }
        func value() throws(JSONPatchError) -> JSON {
            guard let value = object["value"] else { throw .invalidPatch("\"\(op)\" needs a \"value\"") }
            return value
        }
        switch op {
        case "add": self = .add(path: try pointer("path"), value: try value())
        case "remove": self = .remove(path: try pointer("path"))
        case "replace": self = .replace(path: try pointer("path"), value: try value())
        case "move": self = .move(from: try pointer("from"), path: try pointer("path"))
        case "copy": self = .copy(from: try pointer("from"), path: try pointer("path"))
        case "test": self = .test(path: try pointer("path"), value: try value())
        default: throw .invalidPatch("unknown op \"\(op)\"")
        }
    }

    public var json: JSON {
        var object: [String: JSON] = ["op": .string(name), "path": .string(path.description)]
        switch self {
        case .add(_, let value), .replace(_, let value), .test(_, let value): object["value"] = value
        case .move(let from, _), .copy(let from, _): object["from"] = .string(from.description)
        case .remove: break
        }
        return .object(object)
    }

    /// Writes the operation as compact JSON, keys in sorted order like `JSON.write(to:)`, without
    /// building an intermediate object.
    public func write(to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        switch self {
        case .move(let from, _), .copy(let from, _):
            buffer.append(contentsOf: #""from":"#.utf8)
            JSONWriter.writeString(from.description, to: &buffer)
            buffer.append(UInt8(ascii: ","))
        default: break
        }
        buffer.append(contentsOf: #""op":""#.utf8)
        buffer.append(contentsOf: name.utf8)
        buffer.append(contentsOf: #"","path":"#.utf8)
        JSONWriter.writeString(path.description, to: &buffer)
        switch self {
        case .add(_, let value), .replace(_, let value), .test(_, let value):
            buffer.append(contentsOf: #","value":"#.utf8)
            value.write(to: &buffer)
        default: break
        }
        buffer.append(UInt8(ascii: "}"))
    }
}
