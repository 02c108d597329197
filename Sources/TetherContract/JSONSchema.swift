import TetherJSON

/// A type that states its own JSON Schema instead of being recorded (`AnyPresence`, a type
/// with a custom `init(from:)` the recorder cannot follow).
public protocol JSONSchemaDescribing {
    static var jsonSchema: JSON { get }
}

/// JSON Schema (2020-12) of `Decodable` types, recorded by decoding each type once from a
/// decoder that answers with neutral values and writes down what was asked (as `JSONShape`
/// does for `describe`'s `args`). Structs go under `$defs` by their Swift name and are
/// referenced with `$ref`; the top-level type of each `schema(of:)` is written inline.
///
/// What it describes is what synthesized conformances read. A type whose initializer rejects
/// the neutral values is described as far as its decoding got; an enum is described fully only
/// when it is `CaseIterable` (its cases, encoded, are the `enum`).
public final class JSONSchemaRecorder {
    /// The structs met so far, by the name their `$ref` uses.
    public private(set) var definitions: [String: JSON] = [:]
    private var names: [ObjectIdentifier: String] = [:]
    /// Structs being recorded: met again below themselves, they are a `$ref` (recursion).
    private var recording: Set<ObjectIdentifier> = []
    private var referencedWhileRecording: Set<ObjectIdentifier> = []

    public init() {}

    /// The schema of `type`, inline (its nested structs go to `definitions`).
    public func schema<T: Decodable>(of type: T.Type) -> JSON {
        record(T.self, inline: true).schema
    }

    /// `schema` accepting `null` as well.
    public static func nullable(_ schema: JSON) -> JSON {
        guard case .object(var members) = schema, !members.isEmpty else { return schema }
        if members["$ref"] == nil, members["anyOf"] == nil {
            switch members["type"] {
            case .string(let type)?:
                members["type"] = [.string(type), "null"]
            case .array(let types)? where !types.contains("null"):
                members["type"] = .array(types + ["null"])
            default:
                break
            }
            if case .array(let values)? = members["enum"], !values.contains(.null) { members["enum"] = .array(values + [.null]) }
            if members["type"] != nil { return .object(members) }
        }
        return ["anyOf": [schema, ["type": "null"]]]
    }

    /// What `T` was read as, and the neutral value its decoding produced (nil when it threw).
    func record<T: Decodable>(_ type: T.Type, inline: Bool = false) -> (value: T?, schema: JSON) {
        // Optional first: `"" as? String?` succeeds, and would lose the null.
        if let optional = T.self as? any OptionalSchemaMarker.Type {
            return (optional.noValue as? T, Self.nullable(recordAny(optional.wrappedType)))
        }
        if let json = JSON.null as? T { return (json, [:]) }
        if let described = T.self as? any JSONSchemaDescribing.Type { return (try? T(from: SchemaProbe(self)), described.jsonSchema) }
        if let leaf = Self.leaf(T.self) { return leaf }
        if let array = T.self as? any ArraySchemaMarker.Type {
            return (array.empty as? T, ["type": "array", "items": recordAny(array.elementType)])
        }
        if let dictionary = T.self as? any DictionarySchemaMarker.Type {
            return (dictionary.empty as? T, ["type": "object", "additionalProperties": recordAny(dictionary.valueType)])
        }
        if let cases = T.self as? any (CaseIterable & Encodable).Type, let described = Self.enumeration(cases) {
            return (described.first as? T, described.schema)
        }
        return recordComposite(T.self, inline: inline)
    }

    private func recordAny(_ type: any Decodable.Type) -> JSON {
        func open<T: Decodable>(_ type: T.Type) -> JSON { record(T.self).schema }
        return open(type)
    }

    /// A struct (keyed: a `$defs` entry), or a type that decodes one single or unkeyed value.
    private func recordComposite<T: Decodable>(_ type: T.Type, inline: Bool) -> (value: T?, schema: JSON) {
        let id = ObjectIdentifier(T.self)
        if recording.contains(id) {
            referencedWhileRecording.insert(id)
            return (nil, reference(to: T.self))
        }
        recording.insert(id)
        let probe = SchemaProbe(self)
        let value = try? T(from: probe)
        recording.remove(id)
        // A struct without members reads nothing at all: an empty object (`NoArgs`, `NoViews`).
        let schema = probe.schema ?? (value == nil ? [:] : ["type": "object", "properties": [:], "additionalProperties": false])
        guard probe.isObject else { return (value, schema) }
        let referenced = referencedWhileRecording.remove(id) != nil
        if inline && !referenced { return (value, schema) }
        let ref = reference(to: T.self)
        definitions[names[id]!] = schema
        return (value, inline ? schema : ref)
    }

    private func reference<T>(to type: T.Type) -> JSON {
        let id = ObjectIdentifier(T.self)
        if let name = names[id] { return ["$ref": .string("#/$defs/\(name)")] }
        let base = String(String(describing: T.self).map { $0.isLetter || $0.isNumber || $0 == "_" ? $0 : "_" })
        var name = base
        var suffix = 2
        while names.values.contains(name) {
            name = "\(base)\(suffix)"
            suffix += 1
        }
        names[id] = name
        return ["$ref": .string("#/$defs/\(name)")]
    }

    /// Strings, booleans, numbers and integers: a neutral value and the schema.
    static func leaf<T>(_ type: T.Type) -> (value: T?, schema: JSON)? {
        if let value = "" as? T { return (value, ["type": "string"]) }
        if let value = false as? T { return (value, ["type": "boolean"]) }
        if let value = 0.0 as? T { return (value, ["type": "number"]) }
        if let value = Float(0) as? T { return (value, ["type": "number"]) }
        if let integer = T.self as? any FixedWidthInteger.Type, let value = integer.init(0) as? T {
            // The bounds are part of the contract: a larger number is refused for its shape.
            return (value, ["type": "integer", "minimum": .int(Int(clamping: integer.min)), "maximum": .int(Int(clamping: integer.max))])
        }
        return nil
    }

    /// An enum's cases as `{"type": ..., "enum": [...]}`, the cases encoded as JSON.
    private static func enumeration<E: CaseIterable & Encodable>(_ type: E.Type) -> (first: E?, schema: JSON)? {
        let values = E.allCases.compactMap { try? JSONValueEncoder().encode($0) }
        guard !values.isEmpty else { return nil }
        let types = Set(values.map(\.typeName))
        var schema: JSON = ["enum": .array(values)]
        if types.count == 1, let type = types.first {
            schema = ["type": .string(type == "number" && values.allSatisfy { $0.intValue != nil } ? "integer" : type), "enum": .array(values)]
        }
        return (E.allCases.first, schema)
    }
}

// Markers that let the recorder see through containers without decoding them (a dictionary's
// keyed container has no keys to ask for; an Optional or array of a recursive type never ends).
protocol OptionalSchemaMarker {
    static var wrappedType: any Decodable.Type { get }
    static var noValue: Self { get }
}

extension Optional: OptionalSchemaMarker where Wrapped: Decodable {
    static var wrappedType: any Decodable.Type { Wrapped.self }
    static var noValue: Self { nil }
}

protocol ArraySchemaMarker {
    static var elementType: any Decodable.Type { get }
    static var empty: Self { get }
}

extension Array: ArraySchemaMarker where Element: Decodable {
    static var elementType: any Decodable.Type { Element.self }
    static var empty: Self { [] }
}

protocol DictionarySchemaMarker {
    static var valueType: any Decodable.Type { get }
    static var empty: Self { get }
}

// String and Int keys (any `CodingKeyRepresentable` key) are an object's member names.
extension Dictionary: DictionarySchemaMarker where Key: CodingKeyRepresentable, Value: Decodable {
    static var valueType: any Decodable.Type { Value.self }
    static var empty: Self { [:] }
}
