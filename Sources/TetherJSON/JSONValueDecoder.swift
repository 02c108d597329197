// JSON -> Decodable without going through bytes.

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

    /// When true, an object member that the decoded type never looked at is an error ("unknown
    /// field args.bogus"), so a misspelt or misplaced field is reported instead of ignored.
    public var rejectsUnknownKeys = false

    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from json: JSON) throws -> T {
        if T.self == JSON.self, let json = json as? T { return json }
        let root = _LazyPath(base: rootPath.map { _JSONKey(stringValue: $0) }, tail: .none)
        let usage = rejectsUnknownKeys ? _KeyUsage() : nil
        defer { usage?.forgetContainers() }
        let decoder = _JSONValueDecoder(value: json, path: root, userInfo: userInfo, usage: usage)
        let value = try T(from: decoder)
        try usage?.checkNoUnknownKeys()
        return value
    }
}

/// The keyed containers of one strict decode, each with the members it was asked about.
final class _KeyUsage {
    private var containers: [any _ReportsUnusedKeys] = []

    func register(_ container: any _ReportsUnusedKeys) { containers.append(container) }

    /// Containers hold their decoder, which holds this: dropping them ends the cycle.
    func forgetContainers() { containers.removeAll() }

    func checkNoUnknownKeys() throws {
        for container in containers {
            guard let key = container.unusedKeys().min() else { continue }
            let path = container.codingPath + [_JSONKey(stringValue: key)]
            let known = container.askedKeys().sorted()
            let hint = known.isEmpty ? "it takes no fields" : "known: \(known.joined(separator: ", "))"
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "unknown field \(_renderCodingPath(path)) (\(hint))"))
        }
    }
}

protocol _ReportsUnusedKeys: AnyObject {
    var codingPath: [any CodingKey] { get }
    func unusedKeys() -> [String]
    func askedKeys() -> Set<String>
}

// MARK: - Decoder

final class _JSONValueDecoder: Decoder {
    let value: JSON
    let path: _LazyPath
    let sendableUserInfo: [CodingUserInfoKey: any Sendable]
    /// Set for strict decoding (`rejectsUnknownKeys`).
    let usage: _KeyUsage?

    var codingPath: [any CodingKey] { path.array }
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }

    init(value: JSON, path: _LazyPath, userInfo: [CodingUserInfoKey: any Sendable], usage: _KeyUsage?) {
        self.value = value
        self.path = path
        self.sendableUserInfo = userInfo
        self.usage = usage
    }

    /// A decoder for a value inside this one (same options).
    func child(_ value: JSON, at path: _LazyPath) -> _JSONValueDecoder {
        _JSONValueDecoder(value: value, path: path, userInfo: sendableUserInfo, usage: usage)
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

    /// Decodes any value: common leaf types directly, others through a child decoder.
    func unbox<T: Decodable>(_ type: T.Type, from value: JSON, at path: @autoclosure () -> _LazyPath) throws -> T {
        if T.self == String.self, let s = try Self.unboxString(value, path: path().array) as? T { return s }
        if T.self == Int.self, let i = try Self.unboxInteger(Int.self, value, path: path().array) as? T { return i }
        if T.self == Bool.self, let b = try Self.unboxBool(value, path: path().array) as? T { return b }
        if T.self == Double.self, let d = try Self.unboxDouble(value, path: path().array) as? T { return d }
        if T.self == JSON.self, let json = value as? T { return json }
        return try T(from: child(value, at: path()))
    }
}

/// A class, not a struct: `KeyedDecodingContainer` copies its concrete container on every call,
/// and copying a reference is one retain instead of one per field.
final class _KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol, _ReportsUnusedKeys {
    let decoder: _JSONValueDecoder
    let members: [String: JSON]
    let path: _LazyPath
    /// The members the decoded type asked about (strict decoding only).
    private var asked: Set<String> = []
    private let tracksKeys: Bool

    init(decoder: _JSONValueDecoder, members: [String: JSON], path: _LazyPath) {
        self.decoder = decoder
        self.members = members
        self.path = path
        tracksKeys = decoder.usage != nil
        decoder.usage?.register(self)
    }

    var codingPath: [any CodingKey] { path.array }

    var allKeys: [Key] {
        if tracksKeys { asked.formUnion(members.keys) }
        return members.keys.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool {
        if tracksKeys { asked.insert(key.stringValue) }
        return members[key.stringValue] != nil
    }

    func unusedKeys() -> [String] { members.keys.filter { !asked.contains($0) } }
    func askedKeys() -> Set<String> { asked }

    func childPath(_ key: Key) -> [any CodingKey] { path.appending(key).array }

    func value(_ key: Key) throws -> JSON {
        if tracksKeys { asked.insert(key.stringValue) }
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
        if tracksKeys { asked.insert(_JSONKey.super.stringValue) }
        return decoder.child(members[_JSONKey.super.stringValue] ?? .null, at: path.appending(_JSONKey.super))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        if tracksKeys { asked.insert(key.stringValue) }
        return decoder.child(members[key.stringValue] ?? .null, at: path.appending(key))
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
        let child = decoder.child(value, at: currentPath)
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
