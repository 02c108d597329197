/// The JSON a `Decodable` type reads: which fields, of which JSON types, which are optional.
///
/// Found by decoding the type once from a probe that answers every request with a neutral value
/// and writes down what was asked. It describes what synthesized `Decodable` conformances read;
/// a type whose initializer rejects the neutral values (an enum with raw values, a validating
/// init) is described as far as its decoding got.
public indirect enum JSONShape: Hashable, Sendable {
    case string, integer, number, boolean
    /// Any JSON value (a `JSON` field).
    case any
    case array(of: JSONShape)
    /// An object with these fields, in the order the type reads them.
    case object([Field])

    public struct Field: Hashable, Sendable {
        public var name: String
        public var shape: JSONShape
        public var isOptional: Bool

        public init(name: String, shape: JSONShape, isOptional: Bool) {
            self.name = name
            self.shape = shape
            self.isOptional = isOptional
        }
    }

    /// What decoding `type` reads.
    public static func of<T: Decodable>(_ type: T.Type) -> JSONShape {
        _ShapeProbe.shape(of: type)
    }

    /// The JSON type's name: "string", "integer", "number", "boolean", "array", "object" or "any".
    public var typeName: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .number: return "number"
        case .boolean: return "boolean"
        case .any: return "any"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// The shape as JSON: `{"type": "integer"}`, `{"type": "array", "items": ...}`,
    /// `{"type": "object", "fields": {"by": {"type": "integer", "optional": true}}}`.
    public var json: JSON {
        switch self {
        case .string, .integer, .number, .boolean, .any: return ["type": .string(typeName)]
        case .array(let items): return ["type": "array", "items": items.json]
        case .object(let fields): return ["type": "object", "fields": Self.fieldsJSON(fields)]
        }
    }

    /// Reads a shape back from its JSON form; anything unrecognised is `.any`.
    public init(described json: JSON) {
        switch json["type"]?.stringValue {
        case "string": self = .string
        case "integer": self = .integer
        case "number": self = .number
        case "boolean": self = .boolean
        case "array": self = .array(of: json["items"].map(JSONShape.init(described:)) ?? .any)
        case "object":
            guard case .object(let members)? = json["fields"] else { self = .object([]); return }
            self = .object(members.keys.sorted().map { name in
                Field(name: name, shape: JSONShape(described: members[name]!), isOptional: members[name]?["optional"]?.boolValue ?? false)
            })
        default: self = .any
        }
    }

    /// An object's fields as `{"name": {"type": ..., "optional": true}}`.
    public static func fieldsJSON(_ fields: [Field]) -> JSON {
        var members: [String: JSON] = [:]
        for field in fields {
            var described = field.shape.json
            if field.isOptional, case .object(var object) = described {
                object["optional"] = true
                described = .object(object)
            }
            members[field.name] = described
        }
        return .object(members)
    }
}

// MARK: - The probe

/// Records what one position of the decoded value was read as.
final class _ShapeProbe: Decoder {
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// What this position was read as; nil while nothing asked.
    var shape: JSONShape?
    private var fields: [JSONShape.Field] = []
    private let depth: Int

    init(depth: Int) { self.depth = depth }

    static func shape<T: Decodable>(of type: T.Type, depth: Int = 0) -> JSONShape {
        if T.self == JSON.self || depth > 16 { return .any }
        let probe = _ShapeProbe(depth: depth)
        _ = try? T(from: probe)
        return probe.shape ?? .any
    }

    func addField(_ name: String, _ shape: JSONShape, optional: Bool) {
        if let index = fields.firstIndex(where: { $0.name == name }) {
            fields[index].isOptional = fields[index].isOptional && optional
            return
        }
        fields.append(.init(name: name, shape: shape, isOptional: optional))
        self.shape = .object(fields)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if shape == nil { shape = .object([]) }
        return KeyedDecodingContainer(_ShapeKeyedProbe<Key>(probe: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        _ShapeUnkeyedProbe(probe: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        _ShapeSingleProbe(probe: self)
    }

    /// The neutral value of a leaf type, and its shape; nil for other types.
    static func leaf<T>(_ type: T.Type) -> (value: T, shape: JSONShape)? {
        if let value = "" as? T { return (value, .string) }
        if let value = false as? T { return (value, .boolean) }
        if let value = 0.0 as? T { return (value, .number) }
        if let value = Float(0) as? T { return (value, .number) }
        if let integer = T.self as? any FixedWidthInteger.Type, let value = integer.init(0) as? T { return (value, .integer) }
        return nil
    }

    /// Decodes `T` at a child position, noting its shape.
    func decodeChild<T: Decodable>(_ type: T.Type) throws -> (T, JSONShape) {
        if let leaf = Self.leaf(T.self) { return (leaf.value, leaf.shape) }
        if T.self == JSON.self, let null = JSON.null as? T { return (null, .any) }
        let child = _ShapeProbe(depth: depth + 1)
        guard depth < 16 else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "too deep")) }
        do {
            let value = try T(from: child)
            return (value, child.shape ?? .any)
        } catch {
            pendingShape = child.shape ?? .any
            throw error
        }
    }

    /// The shape of a child whose decoding threw: still worth describing.
    var pendingShape: JSONShape?
}

private struct _ShapeKeyedProbe<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let probe: _ShapeProbe
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try read(T.self, key, optional: false)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try read(T.self, key, optional: true)
    }

    private func read<T: Decodable>(_ type: T.Type, _ key: Key, optional: Bool) throws -> T {
        do {
            let (value, shape) = try probe.decodeChild(T.self)
            probe.addField(key.stringValue, shape, optional: optional)
            return value
        } catch {
            probe.addField(key.stringValue, probe.pendingShape ?? .any, optional: optional)
            throw error
        }
    }

    // The concrete overloads all go through the generic one.
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try read(type, key, optional: false) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try read(type, key, optional: false) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try read(type, key, optional: false) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try read(type, key, optional: false) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try read(type, key, optional: false) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try read(type, key, optional: false) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try read(type, key, optional: false) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try read(type, key, optional: false) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try read(type, key, optional: false) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try read(type, key, optional: false) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try read(type, key, optional: false) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try read(type, key, optional: false) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try read(type, key, optional: false) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try read(type, key, optional: false) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try read(type, key, optional: true) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try read(type, key, optional: true) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        let child = _ShapeProbe(depth: 1)
        let container = try child.container(keyedBy: NestedKey.self)
        probe.addField(key.stringValue, child.shape ?? .any, optional: false)
        return container
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        probe.addField(key.stringValue, .array(of: .any), optional: false)
        return _ShapeUnkeyedProbe(probe: _ShapeProbe(depth: 1))
    }

    func superDecoder() throws -> any Decoder { probe }
    func superDecoder(forKey key: Key) throws -> any Decoder { _ShapeProbe(depth: 1) }
}

/// Offers one element, so an array's element type is read once.
private struct _ShapeUnkeyedProbe: ForwardingUnkeyedDecodingContainer {
    let probe: _ShapeProbe
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex > 0 }

    init(probe: _ShapeProbe) {
        self.probe = probe
        if probe.shape == nil { probe.shape = .array(of: .any) }
    }

    mutating func decodeNil() throws -> Bool { false }


    mutating func decodeElement<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        do {
            let (value, shape) = try probe.decodeChild(T.self)
            probe.shape = .array(of: shape)
            return value
        } catch {
            probe.shape = .array(of: probe.pendingShape ?? .any)
            throw error
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        return try _ShapeProbe(depth: 1).container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        return _ShapeUnkeyedProbe(probe: _ShapeProbe(depth: 1))
    }

    mutating func superDecoder() throws -> any Decoder { _ShapeProbe(depth: 1) }
}

private struct _ShapeSingleProbe: ForwardingSingleValueDecodingContainer {
    let probe: _ShapeProbe
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { false }


    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            let (value, shape) = try probe.decodeChild(T.self)
            probe.shape = shape
            return value
        } catch {
            probe.shape = probe.pendingShape ?? .any
            throw error
        }
    }
}
