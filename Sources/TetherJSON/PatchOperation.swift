/// One JSON Patch operation (RFC 6902).
public enum PatchOperation: Hashable, Sendable {
    case add(path: JSONPointer, value: JSON)
    case remove(path: JSONPointer)
    case replace(path: JSONPointer, value: JSON)
    case move(from: JSONPointer, path: JSONPointer)
    case copy(from: JSONPointer, path: JSONPointer)
    case test(path: JSONPointer, value: JSON)

    public var path: JSONPointer {
        switch self {
        case .add(let path, _), .remove(let path), .replace(let path, _), .move(_, let path),
            .copy(_, let path), .test(let path, _):
            return path
        }
    }

    public var name: String {
        switch self {
        case .add: return "add"
        case .remove: return "remove"
        case .replace: return "replace"
        case .move: return "move"
        case .copy: return "copy"
        case .test: return "test"
        }
    }
}

// MARK: - As JSON

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
