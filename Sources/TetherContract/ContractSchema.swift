import TetherJSON

/// What `describe` says of a contract: the JSON Schema (2020-12) of its state, per-viewer
/// values, presence data, action arguments and errors, and the fingerprint of that schema.
///
/// ```json
/// {"$schema": "https://json-schema.org/draft/2020-12/schema",
///  "state": {"type": "object", "properties": {"count": {"type": "integer", "default": 0}},
///            "required": ["count"], "additionalProperties": false},
///  "views": {...}, "presence": {"type": "object"},
///  "actions": {"increment": {"type": "object", "properties": {"by": {"type": ["integer", "null"]}}, ...}},
///  "errors": {"overflow": {"code": "invalid_args"}},
///  "$defs": {...}}
/// ```
///
/// Every State member is required (a nil one is published as `null`); no Views member is (a
/// nil one is left out of the viewer's document). `$ref`s point into the document's `$defs`.
public struct ContractSchema: Sendable, Hashable {
    public static let dialect = "https://json-schema.org/draft/2020-12/schema"

    /// The schema document `describe` carries.
    public let document: JSON
    /// `"sha256:"` and 64 hex digits: `CanonicalSchema.fingerprint(document)`.
    public let fingerprint: String

    public init<C: Contract>(_ contract: C.Type) {
        let recorder = JSONSchemaRecorder()
        var state = Self.object(recorder.schema(of: C.State.self), allRequired: true)
        if let defaults = C.defaultState.flatMap({ try? JSONValueEncoder().encode($0) }) { state = Self.annotate(state, defaults: defaults) }
        let views = Self.object(recorder.schema(of: C.Views.self), allRequired: false)
        let presence = recorder.schema(of: C.Presence.self)
        var actions: [String: JSON] = [:]
        for action in C.actionList {
            func open<Args: Decodable>(_ type: Args.Type) -> JSON { recorder.schema(of: Args.self) }
            actions[action.name] = open(action.argumentsType)
        }
        var errors: [String: JSON] = [:]
        for failure in C.Failure.allCases { errors[failure.rawValue] = ["code": .string(failure.code.rawValue)] }
        document = [
            "$schema": .string(Self.dialect), "state": state, "views": views, "presence": presence,
            "actions": .object(actions), "errors": .object(errors), "$defs": .object(recorder.definitions),
        ]
        fingerprint = CanonicalSchema.fingerprint(document)
    }

    /// The names of the State members: the document's top-level members.
    public var stateNames: [String] { (document["state"]?["properties"]?.objectValue?.keys).map { $0.sorted() } ?? [] }
    /// The names of the Views members: each viewer's own members.
    public var viewNames: [String] { (document["views"]?["properties"]?.objectValue?.keys).map { $0.sorted() } ?? [] }

    /// What is wrong when a ViewModel of `kind` publishes `published` but its contract declares
    /// `stateNames`; nil when they agree.
    public func publicationProblem(kind: String, published: Set<String>) -> String? {
        let declared = Set(stateNames)
        guard published != declared else { return nil }
        var problems: [String] = []
        let undeclared = published.subtracting(declared).sorted()
        let missing = declared.subtracting(published).sorted()
        if !undeclared.isEmpty { problems.append("publishes \(Self.list(undeclared)) that its contract does not declare") }
        if !missing.isEmpty { problems.append("does not publish \(Self.list(missing)) of its contract") }
        return "kind \(kind) " + problems.joined(separator: ", and ")
    }

    private static func list(_ names: [String]) -> String { names.map { "\"\($0)\"" }.joined(separator: ", ") }

    /// A State or Views object: every member required (State), or none (Views). A nil member of
    /// either may be `null` or absent, and the recorder already made Optional members nullable.
    private static func object(_ schema: JSON, allRequired: Bool) -> JSON {
        guard case .object(var members) = schema else { return schema }
        let names = members["properties"]?.objectValue?.keys.sorted() ?? []
        members["required"] = allRequired && !names.isEmpty ? .array(names.map(JSON.string)) : nil
        return .object(members)
    }

    /// Each member's schema gains its `default`.
    private static func annotate(_ schema: JSON, defaults: JSON) -> JSON {
        guard case .object(var members) = schema, case .object(var properties)? = members["properties"] else { return schema }
        for (name, value) in defaults.objectValue ?? [:] {
            guard case .object(var property)? = properties[name] else { continue }
            property["default"] = value
            properties[name] = .object(property)
        }
        members["properties"] = .object(properties)
        return .object(members)
    }
}
