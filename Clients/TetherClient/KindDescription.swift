import TetherJSON

/// A room kind as the server describes it (`describe` request): its scope and its actions with
/// their argument fields, so a client can discover what a room does.
public struct KindDescription: Equatable, Sendable {
    public var name: String
    /// "shared" or "perSession" (as the server names it).
    public var scope: String
    public var actions: [ActionDescription]

    public init(name: String, scope: String, actions: [ActionDescription]) {
        self.name = name
        self.scope = scope
        self.actions = actions
    }

    /// One kind from the `description` reply's `kinds` array; nil when it has no name.
    public init?(json: JSON) {
        guard let name = json["name"]?.stringValue else { return nil }
        self.name = name
        scope = json["scope"]?.stringValue ?? "?"
        actions = (json["actions"]?.arrayValue ?? []).compactMap(ActionDescription.init(json:))
    }
}

public struct ActionDescription: Equatable, Sendable {
    public var name: String
    /// The argument fields, by name.
    public var arguments: [ArgumentDescription]

    public init(name: String, arguments: [ArgumentDescription]) {
        self.name = name
        self.arguments = arguments
    }

    init?(json: JSON) {
        guard let name = json["name"]?.stringValue else { return nil }
        self.name = name
        guard case .object(let args)? = json["args"] else {
            arguments = []
            return
        }
        arguments = args.keys.sorted().map { field in
            let spec = args[field]!
            return ArgumentDescription(
                name: field, type: spec["type"]?.stringValue ?? "any", isOptional: spec["optional"]?.boolValue ?? false)
        }
    }

    /// "increment by: integer?" — the name and each field with its type, "?" marking optional ones.
    public var signature: String {
        ([name] + arguments.map { "\($0.name): \($0.type)\($0.isOptional ? "?" : "")" }).joined(separator: " ")
    }

    /// A JSON object to start typing the arguments from: each field with a placeholder of its type.
    public var argumentTemplate: String {
        guard !arguments.isEmpty else { return "{}" }
        let fields = arguments.map { argument -> String in
            let placeholder: JSON = switch argument.type {
            case "string": ""
            case "integer", "number": 0
            case "boolean": false
            case "array": []
            case "object": [:]
            default: .null
            }
            return "\(JSON.string(argument.name).jsonString): \(placeholder.jsonString)"
        }
        return "{" + fields.joined(separator: ", ") + "}"
    }
}

public struct ArgumentDescription: Equatable, Sendable {
    public var name: String
    /// "string", "integer", "number", "boolean", "array", "object" or "any".
    public var type: String
    public var isOptional: Bool

    public init(name: String, type: String, isOptional: Bool) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
    }
}
