// Encodable -> JSON without going through bytes.

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
