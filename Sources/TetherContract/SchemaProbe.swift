import TetherJSON

/// The decoder `JSONSchemaRecorder` decodes a type from: every request is answered with a
/// neutral value (through the recorder) and written down as schema.
class SchemaProbe: Decoder {
    let recorder: JSONSchemaRecorder
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// What this position was read as; nil while nothing asked.
    var schema: JSON?
    /// Whether it was read as an object (a keyed container): a struct.
    private(set) var isObject = false
    private var properties: [String: JSON] = [:]
    private var required: [String] = []

    init(_ recorder: JSONSchemaRecorder) { self.recorder = recorder }

    /// Notes a member read from the keyed container; read twice, it is required if once so.
    func addProperty(_ name: String, _ schema: JSON, required isRequired: Bool) {
        if properties[name] == nil { properties[name] = schema }
        if isRequired, !required.contains(name) { required.append(name) }
        var object: [String: JSON] = ["type": "object", "properties": .object(properties), "additionalProperties": false]
        if !required.isEmpty { object["required"] = .array(required.map(JSON.string)) }
        self.schema = .object(object)
    }

    /// A value of `T` for a member, or an error when none could be made (the member is still noted).
    func child<T: Decodable>(_ type: T.Type) throws -> (value: T, schema: JSON) {
        let (value, schema) = recorder.record(T.self)
        guard let value else { throw ProbeStopped(schema: schema) }
        return (value, schema)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if schema == nil {
            isObject = true
            schema = ["type": "object", "properties": [:], "additionalProperties": false]
        }
        return KeyedDecodingContainer(SchemaKeyedProbe<Key>(probe: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { SchemaUnkeyedProbe(probe: self) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { SchemaSingleProbe(probe: self) }
}

/// No neutral value could be made for a member (an enum that is not `CaseIterable`, a
/// recursive type); its schema is known all the same.
struct ProbeStopped: Error {
    let schema: JSON
}

private struct SchemaKeyedProbe<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let probe: SchemaProbe
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        do {
            let (value, schema) = try probe.child(T.self)
            probe.addProperty(key.stringValue, schema, required: true)
            return value
        } catch let stopped as ProbeStopped {
            probe.addProperty(key.stringValue, stopped.schema, required: true)
            throw stopped
        }
    }

    /// An optional member: not required, may be `null`, and absent from the neutral value.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        let schema = probe.recorder.record(T.self).schema
        probe.addProperty(key.stringValue, JSONSchemaRecorder.nullable(schema), required: false)
        return nil
    }

    // The concrete overloads all go through the generic ones.
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(type as Bool.Type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(type as String.Type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(type as Double.Type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type as Float.Type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(type as Int.Type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(type as Int8.Type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(type as Int16.Type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type as Int32.Type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(type as Int64.Type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(type as UInt.Type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(type as UInt8.Type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(type as UInt16.Type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type as UInt32.Type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type as UInt64.Type, key) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try optional(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optional(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optional(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optional(type, key) }

    private func decode<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T { try decode(T.self, forKey: key) }
    private func optional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? { try decodeIfPresent(T.self, forKey: key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        let nested = NestedProbe(probe.recorder) { [probe] schema in probe.addProperty(key.stringValue, schema, required: true) }
        return try nested.container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let nested = NestedProbe(probe.recorder) { [probe] schema in probe.addProperty(key.stringValue, schema, required: true) }
        return SchemaUnkeyedProbe(probe: nested)
    }

    func superDecoder() throws -> any Decoder { probe }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        NestedProbe(probe.recorder) { [probe] schema in probe.addProperty(key.stringValue, schema, required: true) }
    }
}

/// A probe for a nested container of a hand-written `init(from:)`: what it learns is passed up
/// as it learns it.
private final class NestedProbe: SchemaProbe {
    private let report: (JSON) -> Void
    override var schema: JSON? { didSet { if let schema { report(schema) } } }

    init(_ recorder: JSONSchemaRecorder, report: @escaping (JSON) -> Void) {
        self.report = report
        super.init(recorder)
    }
}

/// Offers one element, so the element type is read once.
private struct SchemaUnkeyedProbe: ForwardingUnkeyedDecodingContainer {
    let probe: SchemaProbe
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex > 0 }

    init(probe: SchemaProbe) {
        self.probe = probe
        if probe.schema == nil { probe.schema = ["type": "array", "items": [:]] }
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decodeElement<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        let (value, schema) = probe.recorder.record(T.self)
        probe.schema = ["type": "array", "items": schema]
        guard let value else { throw ProbeStopped(schema: schema) }
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        let nested = NestedProbe(probe.recorder) { [probe] schema in probe.schema = ["type": "array", "items": schema] }
        return try nested.container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        let nested = NestedProbe(probe.recorder) { [probe] schema in probe.schema = ["type": "array", "items": schema] }
        return SchemaUnkeyedProbe(probe: nested)
    }

    mutating func superDecoder() throws -> any Decoder { SchemaProbe(probe.recorder) }
}

/// A type that decodes one value (a wrapper around a string, say) is described as that value.
private struct SchemaSingleProbe: ForwardingSingleValueDecodingContainer {
    let probe: SchemaProbe
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { false }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, schema) = probe.recorder.record(T.self)
        probe.schema = schema
        guard let value else { throw ProbeStopped(schema: schema) }
        return value
    }
}
