import TetherJSON

/// `describe`'s kind descriptions, read and written (MessageDecoding.swift and MessageEncoding.swift hold the messages).
extension KindDescription {
    /// `{"name": "counter", "scope": "shared", "actions": [{"name": "increment", "args": {...}}]}`
    /// `schema` and `fingerprint` are written only when set, so a kind without a contract is
    /// described exactly as before they existed.
    public var json: JSON {
        var members: [String: JSON] = [
            "name": .string(name), "scope": .string(scope),
            "actions": .array(actions.map { ["name": .string($0.name), "args": JSONShape.fieldsJSON($0.arguments)] }),
        ]
        if let schema { members["schema"] = schema }
        if let fingerprint { members["fingerprint"] = .string(fingerprint) }
        return .object(members)
    }

    init(json: JSON, _ message: MessageFields) throws(ProtocolError) {
        guard case .object(let object) = json else { throw message.fail(.badMessage, "a kind description is an object") }
        let fields = MessageFields(object)
        name = try fields.string("name")
        scope = try fields.string("scope")
        guard case .array(let actionItems)? = object["actions"] else { throw message.fail(.badMessage, "kind \(name) has no \"actions\" array") }
        actions = []
        for item in actionItems {
            guard case .object(let action) = item, case .string(let actionName)? = action["name"] else {
                throw message.fail(.badMessage, "an action of \(name) has no name")
            }
            guard case .object(let args)? = action["args"] ?? .object([:]) else {
                throw message.fail(.badMessage, "\"args\" of \(name).\(actionName) is not an object")
            }
            let arguments = args.keys.sorted().map { key in
                JSONShape.Field(name: key, shape: JSONShape(described: args[key]!), isOptional: args[key]?["optional"]?.boolValue ?? false)
            }
            actions.append(Action(name: actionName, arguments: arguments))
        }
        switch object["schema"] {
        case nil: schema = nil
        case .object?: schema = object["schema"]
        default: throw message.fail(.badMessage, "\"schema\" of \(name) is not an object")
        }
        switch object["fingerprint"] {
        case nil: fingerprint = nil
        case .string(let text)?: fingerprint = text
        default: throw message.fail(.badMessage, "\"fingerprint\" of \(name) is not a string")
        }
    }
}
