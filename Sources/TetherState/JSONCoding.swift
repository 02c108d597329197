// Codable <-> JSON without going through bytes.

// MARK: - Public API

/// Encodes any `Encodable` value straight into a `JSON` value.
///
/// Integers of every width become `.int` (a `UInt`/`UInt64` above `Int.max` is an error),
/// `Float` and `Double` become `.double` (a `Float` keeps its short decimal form: `Float(0.1)`
/// becomes `0.1`, not `0.10000000149011612`); non-finite numbers are an error, as with
/// Foundation's `JSONEncoder`. A `JSON` value inside the encoded value is passed through as is.
/// A value that encodes nothing becomes `{}`.
public struct JSONValueEncoder: Sendable {
    /// Available to the encoded types as `encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> JSON {
        if T.self == JSON.self, let json = value as? JSON { return json }
        let encoder = _JSONValueEncoder(path: _LazyPath(base: [], tail: .none), userInfo: userInfo)
        try value.encode(to: encoder)
        return encoder.result
    }
}

/// Decodes any `Decodable` value straight from a `JSON` value.
///
/// Errors are standard `DecodingError`s whose `codingPath` locates the problem and whose
/// `debugDescription` reads like "expected number at args.by, got string". An integral double
/// decodes as an integer and an integer as a `Double`; integers are range-checked for their
/// width. A `JSON` field is passed through as is.
public struct JSONValueDecoder: Sendable {
    /// Available to the decoded types as `decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Where the decoded value sits in some larger document, e.g. `["args"]`: prepended to the
    /// `codingPath` and the message of every error.
    public var rootPath: [String] = []

    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from json: JSON) throws -> T {
        if T.self == JSON.self, let json = json as? T { return json }
        let root = _LazyPath(base: rootPath.map { _JSONKey(stringValue: $0) }, tail: .none)
        let decoder = _JSONValueDecoder(value: json, path: root, userInfo: userInfo)
        return try T(from: decoder)
    }
}

// MARK: - JSON is Codable (as a single value)

extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        if let direct = decoder as? _JSONValueDecoder {
            self = direct.value
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSON].self) {
            self = .array(a)
        } else if let o = try? container.decode([String: JSON].self) {
            self = .object(o)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a JSON value")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if let direct = encoder as? _JSONValueEncoder {
            direct.set(self)
            return
        }
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d):
            // Matches the writer: non-finite numbers have no JSON form and become null.
            if d.isFinite { try container.encode(d) } else { try container.encodeNil() }
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }
}

// MARK: - Coding keys and paths

struct _JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }

    init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
    }

    static let `super` = _JSONKey(stringValue: "super")
}

/// A coding path built only when someone asks for it: the path of the container plus one more
/// step. Successful decoding of flat values never allocates a path.
struct _LazyPath {
    enum Tail {
        case none
        case key(any CodingKey)
        case index(Int)
    }

    let base: [any CodingKey]
    let tail: Tail

    var array: [any CodingKey] {
        switch tail {
        case .none: return base
        case .key(let key): return base + [key]
        case .index(let index): return base + [_JSONKey(index: index)]
        }
    }

    func appending(_ key: any CodingKey) -> _LazyPath {
        if case .none = tail { return _LazyPath(base: base, tail: .key(key)) }
        return _LazyPath(base: array, tail: .key(key))
    }

    func appending(index: Int) -> _LazyPath {
        if case .none = tail { return _LazyPath(base: base, tail: .index(index)) }
        return _LazyPath(base: array, tail: .index(index))
    }
}

/// "args.items[2].title"; empty for the root.
func _renderCodingPath(_ path: [any CodingKey]) -> String {
    var out = ""
    for key in path {
        if let index = key.intValue {
            out += "[\(index)]"
        } else {
            if !out.isEmpty { out += "." }
            out += key.stringValue
        }
    }
    return out
}

private func _at(_ path: [any CodingKey]) -> String {
    let rendered = _renderCodingPath(path)
    return rendered.isEmpty ? "" : " at \(rendered)"
}

private func _typeMismatch(_ type: Any.Type, expected: String, got value: JSON, path: [any CodingKey]) -> DecodingError {
    if value.isNull {
        return DecodingError.valueNotFound(
            type, .init(codingPath: path, debugDescription: "expected \(expected)\(_at(path)), got null"))
    }
    return DecodingError.typeMismatch(
        type, .init(codingPath: path, debugDescription: "expected \(expected)\(_at(path)), got \(value.typeName)"))
}

// MARK: - Encoder

/// A part of the value under construction that is filled in later: a container handed out by
/// `nestedContainer` and friends (a reference, so writes after it was handed out land), or a
/// `superEncoder()`.
enum _EncodedNode {
    case object(_EncodedObject)
    case array(_EncodedArray)
    case encoder(_JSONValueEncoder)

    var json: JSON {
        switch self {
        case .object(let o): return o.json
        case .array(let a): return a.json
        case .encoder(let e): return e.result
        }
    }
}

final class _EncodedObject {
    /// Members in the order written; the dictionary is built once, at its final size.
    var pairs: [(key: String, value: JSON)] = []
    /// Members that are still open containers, resolved by `json`.
    var nested: [String: _EncodedNode] = [:]

    func set(_ value: JSON, forKey key: String) {
        if pairs.capacity == 0 { pairs.reserveCapacity(8) }
        pairs.append((key, value))
        if !nested.isEmpty { nested[key] = nil }
    }

    func setNested(_ node: _EncodedNode, forKey key: String) {
        nested[key] = node
        pairs.removeAll { $0.key == key }
    }

    var json: JSON {
        var all = [String: JSON](minimumCapacity: pairs.count + nested.count)
        for (key, value) in pairs { all[key] = value }  // a key written twice keeps its last value
        for (key, node) in nested { all[key] = node.json }
        return .object(all)
    }
}

final class _EncodedArray {
    var elements: [JSON] = []
    /// Elements that are still open containers (placeholders in `elements`), resolved by `json`.
    var nested: [(index: Int, node: _EncodedNode)] = []

    func appendNested(_ node: _EncodedNode) {
        nested.append((elements.count, node))
        elements.append(.null)
    }

    var json: JSON {
        if nested.isEmpty { return .array(elements) }
        var all = elements
        for (index, node) in nested { all[index] = node.json }
        return .array(all)
    }
}

final class _JSONValueEncoder: Encoder {
    let path: _LazyPath
    let sendableUserInfo: [CodingUserInfoKey: any Sendable]
    /// What was encoded: a finished value, or an open container.
    var value: JSON?
    var node: _EncodedNode?

    var codingPath: [any CodingKey] { path.array }
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }

    init(path: _LazyPath, userInfo: [CodingUserInfoKey: any Sendable]) {
        self.path = path
        self.sendableUserInfo = userInfo
    }

    /// The encoded value; a value that encoded nothing is an empty object.
    var result: JSON {
        if let node { return node.json }
        return value ?? .object([:])
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: _EncodedObject
        if case .object(let existing) = node {
            object = existing
        } else {
            object = _EncodedObject()
            node = .object(object)
        }
        return KeyedEncodingContainer(_KeyedEncoder<Key>(encoder: self, object: object, path: path))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: _EncodedArray
        if case .array(let existing) = node {
            array = existing
        } else {
            array = _EncodedArray()
            node = .array(array)
        }
        return _UnkeyedEncoder(encoder: self, array: array, path: path)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        _SingleValueEncoder(encoder: self)
    }

    func set(_ value: JSON) {
        self.value = value
        self.node = nil
    }

    // Boxing shared by all containers.

    /// Encodes any value: common leaf types directly, others through a child encoder.
    func box<T: Encodable>(_ value: T, at path: @autoclosure () -> _LazyPath) throws -> JSON {
        if T.self == String.self, let s = value as? String { return .string(s) }
        if T.self == Int.self, let i = value as? Int { return .int(i) }
        if T.self == Bool.self, let b = value as? Bool { return .bool(b) }
        if T.self == Double.self, let d = value as? Double { return try Self.box(d, at: path().array) }
        if T.self == JSON.self, let json = value as? JSON { return json }
        let child = _JSONValueEncoder(path: path(), userInfo: sendableUserInfo)
        try value.encode(to: child)
        return child.result
    }

    static func box(_ value: Double, at path: @autoclosure () -> [any CodingKey]) throws -> JSON {
        guard value.isFinite else {
            let path = path()
            throw EncodingError.invalidValue(
                value, .init(codingPath: path, debugDescription: "\(value) cannot be encoded as a JSON number\(_at(path))"))
        }
        return .double(value)
    }

    static func box(_ value: Float, at path: @autoclosure () -> [any CodingKey]) throws -> JSON {
        guard value.isFinite else {
            let path = path()
            throw EncodingError.invalidValue(
                value, .init(codingPath: path, debugDescription: "\(value) cannot be encoded as a JSON number\(_at(path))"))
        }
        // The double nearest the Float's shortest decimal form reads back as the same Float.
        return .double(Double(value.description) ?? Double(value))
    }

    static func box<T: BinaryInteger>(_ value: T, at path: @autoclosure () -> [any CodingKey]) throws -> JSON {
        guard let int = Int(exactly: value) else {
            let path = path()
            throw EncodingError.invalidValue(
                value, .init(codingPath: path, debugDescription: "\(value) does not fit in a 64-bit signed integer\(_at(path))"))
        }
        return .int(int)
    }
}

/// A class for the same reason as `_KeyedDecoder`.
final class _KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: _JSONValueEncoder
    let object: _EncodedObject
    let path: _LazyPath

    init(encoder: _JSONValueEncoder, object: _EncodedObject, path: _LazyPath) {
        self.encoder = encoder
        self.object = object
        self.path = path
    }

    var codingPath: [any CodingKey] { path.array }

    func set(_ value: JSON, _ key: Key) { object.set(value, forKey: key.stringValue) }

    func encodeNil(forKey key: Key) throws { set(.null, key) }
    func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    func encode(_ value: Double, forKey key: Key) throws {
        set(try _JSONValueEncoder.box(value, at: path.appending(key).array), key)
    }
    func encode(_ value: Float, forKey key: Key) throws {
        set(try _JSONValueEncoder.box(value, at: path.appending(key).array), key)
    }
    func encode(_ value: Int, forKey key: Key) throws { set(.int(value), key) }
    func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int(value)), key) }
    func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int(value)), key) }
    func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int(value)), key) }
    func encode(_ value: Int64, forKey key: Key) throws { set(.int(Int(value)), key) }
    func encode(_ value: UInt, forKey key: Key) throws {
        set(try _JSONValueEncoder.box(value, at: path.appending(key).array), key)
    }
    func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int(value)), key) }
    func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int(value)), key) }
    func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int(value)), key) }
    func encode(_ value: UInt64, forKey key: Key) throws {
        set(try _JSONValueEncoder.box(value, at: path.appending(key).array), key)
    }
    func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(try encoder.box(value, at: path.appending(key)), key)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested: _EncodedObject
        if case .object(let existing) = object.nested[key.stringValue] {
            nested = existing
        } else {
            nested = _EncodedObject()
            object.setNested(.object(nested), forKey: key.stringValue)
        }
        return KeyedEncodingContainer(_KeyedEncoder<NestedKey>(encoder: encoder, object: nested, path: path.appending(key)))
    }

    func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested: _EncodedArray
        if case .array(let existing) = object.nested[key.stringValue] {
            nested = existing
        } else {
            nested = _EncodedArray()
            object.setNested(.array(nested), forKey: key.stringValue)
        }
        return _UnkeyedEncoder(encoder: encoder, array: nested, path: path.appending(key))
    }

    func superEncoder() -> any Encoder {
        superEncoder(key: _JSONKey.super)
    }

    func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(key: key)
    }

    private func superEncoder(key: any CodingKey) -> any Encoder {
        let child = _JSONValueEncoder(path: path.appending(key), userInfo: encoder.sendableUserInfo)
        object.setNested(.encoder(child), forKey: key.stringValue)
        return child
    }
}

struct _UnkeyedEncoder: UnkeyedEncodingContainer {
    let encoder: _JSONValueEncoder
    let array: _EncodedArray
    let path: _LazyPath

    var codingPath: [any CodingKey] { path.array }
    var count: Int { array.elements.count }

    func nextPath() -> _LazyPath { path.appending(index: array.elements.count) }

    func append(_ value: JSON) { array.elements.append(value) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try _JSONValueEncoder.box(value, at: nextPath().array)) }
    mutating func encode(_ value: Float) throws { append(try _JSONValueEncoder.box(value, at: nextPath().array)) }
    mutating func encode(_ value: Int) throws { append(.int(value)) }
    mutating func encode(_ value: Int8) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt) throws { append(try _JSONValueEncoder.box(value, at: nextPath().array)) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt64) throws { append(try _JSONValueEncoder.box(value, at: nextPath().array)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try encoder.box(value, at: nextPath()))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath()
        let nested = _EncodedObject()
        array.appendNested(.object(nested))
        return KeyedEncodingContainer(_KeyedEncoder<NestedKey>(encoder: encoder, object: nested, path: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath()
        let nested = _EncodedArray()
        array.appendNested(.array(nested))
        return _UnkeyedEncoder(encoder: encoder, array: nested, path: path)
    }

    mutating func superEncoder() -> any Encoder {
        let child = _JSONValueEncoder(path: nextPath(), userInfo: encoder.sendableUserInfo)
        array.appendNested(.encoder(child))
        return child
    }
}

struct _SingleValueEncoder: SingleValueEncodingContainer {
    let encoder: _JSONValueEncoder

    var codingPath: [any CodingKey] { encoder.codingPath }

    func set(_ value: JSON) { encoder.set(value) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try _JSONValueEncoder.box(value, at: codingPath)) }
    mutating func encode(_ value: Float) throws { set(try _JSONValueEncoder.box(value, at: codingPath)) }
    mutating func encode(_ value: Int) throws { set(.int(value)) }
    mutating func encode(_ value: Int8) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int64) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt) throws { set(try _JSONValueEncoder.box(value, at: codingPath)) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt32) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt64) throws { set(try _JSONValueEncoder.box(value, at: codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        set(try encoder.box(value, at: encoder.path))
    }
}

// MARK: - Decoder

final class _JSONValueDecoder: Decoder {
    let value: JSON
    let path: _LazyPath
    let sendableUserInfo: [CodingUserInfoKey: any Sendable]

    var codingPath: [any CodingKey] { path.array }
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }

    init(value: JSON, path: _LazyPath, userInfo: [CodingUserInfoKey: any Sendable]) {
        self.value = value
        self.path = path
        self.sendableUserInfo = userInfo
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw _typeMismatch([String: JSON].self, expected: "object", got: value, path: codingPath)
        }
        return KeyedDecodingContainer(_KeyedDecoder<Key>(decoder: self, members: members, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw _typeMismatch([JSON].self, expected: "array", got: value, path: codingPath)
        }
        return _UnkeyedDecoder(decoder: self, elements: elements, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        _SingleValueDecoder(decoder: self)
    }

    // Unboxing shared by all containers. Paths are autoclosures: built only for errors.

    static func unboxBool(_ value: JSON, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let b) = value else { throw _typeMismatch(Bool.self, expected: "boolean", got: value, path: path()) }
        return b
    }

    static func unboxString(_ value: JSON, path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .string(let s) = value else { throw _typeMismatch(String.self, expected: "string", got: value, path: path()) }
        return s
    }

    static func unboxDouble(_ value: JSON, path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch value {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: throw _typeMismatch(Double.self, expected: "number", got: value, path: path())
        }
    }

    static func unboxFloat(_ value: JSON, path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let d = try unboxDouble(value, path: path())
        let f = Float(d)
        if d.isFinite && !f.isFinite {
            let path = path()
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "number \(d)\(_at(path)) does not fit in Float"))
        }
        return f
    }

    static func unboxInteger<T: FixedWidthInteger>(
        _ type: T.Type, _ value: JSON, path: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        switch value {
        case .int(let i):
            if let exact = T(exactly: i) { return exact }
            let path = path()
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "number \(i)\(_at(path)) does not fit in \(T.self)"))
        case .double(let d):
            if let exact = T(exactly: d) { return exact }
            let path = path()
            if d.isFinite && d == d.rounded(.towardZero) {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path, debugDescription: "number \(d)\(_at(path)) does not fit in \(T.self)"))
            }
            throw DecodingError.typeMismatch(
                T.self, .init(codingPath: path, debugDescription: "expected integer\(_at(path)), got \(d)"))
        default:
            throw _typeMismatch(T.self, expected: "integer", got: value, path: path())
        }
    }

    /// Decodes any value: common leaf types directly, others through a child decoder.
    func unbox<T: Decodable>(_ type: T.Type, from value: JSON, at path: @autoclosure () -> _LazyPath) throws -> T {
        if T.self == String.self, let s = try Self.unboxString(value, path: path().array) as? T { return s }
        if T.self == Int.self, let i = try Self.unboxInteger(Int.self, value, path: path().array) as? T { return i }
        if T.self == Bool.self, let b = try Self.unboxBool(value, path: path().array) as? T { return b }
        if T.self == Double.self, let d = try Self.unboxDouble(value, path: path().array) as? T { return d }
        if T.self == JSON.self, let json = value as? T { return json }
        return try T(from: _JSONValueDecoder(value: value, path: path(), userInfo: sendableUserInfo))
    }
}

/// A class, not a struct: `KeyedDecodingContainer` copies its concrete container on every call,
/// and copying a reference is one retain instead of one per field.
final class _KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: _JSONValueDecoder
    let members: [String: JSON]
    let path: _LazyPath

    init(decoder: _JSONValueDecoder, members: [String: JSON], path: _LazyPath) {
        self.decoder = decoder
        self.members = members
        self.path = path
    }

    var codingPath: [any CodingKey] { path.array }

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    func childPath(_ key: Key) -> [any CodingKey] { path.appending(key).array }

    func value(_ key: Key) throws -> JSON {
        guard let value = members[key.stringValue] else {
            let full = _renderCodingPath(childPath(key))
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing field \(full)"))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try _JSONValueDecoder.unboxBool(value(key), path: childPath(key))
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try _JSONValueDecoder.unboxString(value(key), path: childPath(key))
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try _JSONValueDecoder.unboxDouble(value(key), path: childPath(key))
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try _JSONValueDecoder.unboxFloat(value(key), path: childPath(key))
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }

    func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try _JSONValueDecoder.unboxInteger(T.self, value(key), path: childPath(key))
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.unbox(T.self, from: value(key), at: path.appending(key))
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let value = try value(key)
        guard case .object(let nested) = value else {
            throw _typeMismatch([String: JSON].self, expected: "object", got: value, path: childPath(key))
        }
        return KeyedDecodingContainer(_KeyedDecoder<NestedKey>(decoder: decoder, members: nested, path: path.appending(key)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let value = try value(key)
        guard case .array(let nested) = value else {
            throw _typeMismatch([JSON].self, expected: "array", got: value, path: childPath(key))
        }
        return _UnkeyedDecoder(decoder: decoder, elements: nested, path: path.appending(key))
    }

    func superDecoder() throws -> any Decoder {
        _JSONValueDecoder(
            value: members[_JSONKey.super.stringValue] ?? .null, path: path.appending(_JSONKey.super),
            userInfo: decoder.sendableUserInfo)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        _JSONValueDecoder(value: members[key.stringValue] ?? .null, path: path.appending(key), userInfo: decoder.sendableUserInfo)
    }
}

struct _UnkeyedDecoder: UnkeyedDecodingContainer {
    let decoder: _JSONValueDecoder
    let elements: [JSON]
    let path: _LazyPath
    private(set) var currentIndex = 0

    init(decoder: _JSONValueDecoder, elements: [JSON], path: _LazyPath) {
        self.decoder = decoder
        self.elements = elements
        self.path = path
    }

    var codingPath: [any CodingKey] { path.array }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    var currentPath: _LazyPath { path.appending(index: currentIndex) }

    /// The next element, without advancing.
    func peek(_ type: Any.Type) throws -> JSON {
        guard currentIndex < elements.count else {
            let rendered = _renderCodingPath(codingPath)
            let place = rendered.isEmpty ? "index \(currentIndex)" : "\(rendered)[\(currentIndex)]"
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: currentPath.array,
                    debugDescription: "expected another element at \(place), but the array has only \(elements.count)"
                ))
        }
        return elements[currentIndex]
    }

    mutating func next<T>(_ type: T.Type, _ unbox: (JSON, @autoclosure () -> [any CodingKey]) throws -> T) throws -> T {
        let value = try peek(type)
        let result = try unbox(value, currentPath.array)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        if try peek(JSON.self).isNull {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type, _JSONValueDecoder.unboxBool) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type, _JSONValueDecoder.unboxString) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type, _JSONValueDecoder.unboxDouble) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type, _JSONValueDecoder.unboxFloat) }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    mutating func integer<T: FixedWidthInteger>() throws -> T {
        try next(T.self) { value, path in try _JSONValueDecoder.unboxInteger(T.self, value, path: path()) }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try peek(type)
        let result = try decoder.unbox(T.self, from: value, at: currentPath)
        currentIndex += 1
        return result
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let value = try peek(KeyedDecodingContainer<NestedKey>.self)
        guard case .object(let nested) = value else {
            throw _typeMismatch([String: JSON].self, expected: "object", got: value, path: currentPath.array)
        }
        let container = _KeyedDecoder<NestedKey>(decoder: decoder, members: nested, path: currentPath)
        currentIndex += 1
        return KeyedDecodingContainer(container)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let value = try peek((any UnkeyedDecodingContainer).self)
        guard case .array(let nested) = value else {
            throw _typeMismatch([JSON].self, expected: "array", got: value, path: currentPath.array)
        }
        let container = _UnkeyedDecoder(decoder: decoder, elements: nested, path: currentPath)
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let value = try peek((any Decoder).self)
        let child = _JSONValueDecoder(value: value, path: currentPath, userInfo: decoder.sendableUserInfo)
        currentIndex += 1
        return child
    }
}

struct _SingleValueDecoder: SingleValueDecodingContainer {
    let decoder: _JSONValueDecoder

    var codingPath: [any CodingKey] { decoder.codingPath }
    var value: JSON { decoder.value }

    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try _JSONValueDecoder.unboxBool(value, path: codingPath) }
    func decode(_ type: String.Type) throws -> String { try _JSONValueDecoder.unboxString(value, path: codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try _JSONValueDecoder.unboxDouble(value, path: codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try _JSONValueDecoder.unboxFloat(value, path: codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try integer() }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    func integer<T: FixedWidthInteger>() throws -> T {
        try _JSONValueDecoder.unboxInteger(T.self, value, path: codingPath)
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.unbox(T.self, from: value, at: decoder.path)
    }
}
