import TetherJSON
import TetherProtocol

extension KindDescription.Action {
    /// "increment by: integer?" — the name and each field with its type, "?" marking optional ones.
    public var signature: String {
        ([name] + arguments.map { "\($0.name): \($0.shape.typeName)\($0.isOptional ? "?" : "")" }).joined(separator: " ")
    }

    /// A JSON object to start typing the arguments from: each field with a placeholder of its type.
    public var argumentTemplate: String {
        guard !arguments.isEmpty else { return "{}" }
        let fields = arguments.map { argument -> String in
            let placeholder: JSON = switch argument.shape {
            case .string: ""
            case .integer, .number: 0
            case .boolean: false
            case .array: []
            case .object: [:]
            case .any: .null
            }
            return "\(JSON.string(argument.name).jsonString): \(placeholder.jsonString)"
        }
        return "{" + fields.joined(separator: ", ") + "}"
    }
}
