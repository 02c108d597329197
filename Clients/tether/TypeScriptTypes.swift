import TetherJSON

/// JSON Schema, as `JSONSchemaRecorder` writes it, as TypeScript types: objects (members,
/// `required`, `additionalProperties` false or a schema: a map), arrays, `"type": [T, "null"]`,
/// `anyOf`, `enum`, `$ref` into `$defs` (written as `namespace.Name`), and `{}`: `unknown`.
struct SchemaTypes {
    let defs: [String: JSON]
    /// The namespace the `$defs` are declared in ("TodoDefs").
    let namespace: String

    func type(of schema: JSON, indent: Int) -> String {
        guard case .object(let members) = schema else { return "unknown" }
        if let ref = members["$ref"]?.stringValue { return reference(ref) }
        if let alternatives = (members["anyOf"] ?? members["oneOf"])?.arrayValue {
            return Self.union(alternatives.map { type(of: $0, indent: indent) })
        }
        if let value = members["const"] { return Self.literalType(value) }
        if let values = members["enum"]?.arrayValue { return Self.union(values.map(Self.literalType)) }
        let types: [String]
        switch members["type"] {
        case .string(let name)?: types = [name]
        case .array(let names)?: types = names.compactMap(\.stringValue)
        default: types = members["properties"] != nil || members["additionalProperties"] != nil ? ["object"] : []
        }
        guard !types.isEmpty else { return "unknown" }
        return Self.union(types.map { single($0, members, indent: indent) })
    }

    /// `{ name: T; other?: U }` over several lines, for an object schema with `properties`.
    /// `allOptional`: every member may be left out (a contract's views).
    func objectBody(_ schema: JSON, indent: Int, allOptional: Bool = false) -> String? {
        guard let properties = schema["properties"]?.objectValue else { return nil }
        guard !properties.isEmpty else { return "{}" }
        let required = Set((schema["required"]?.arrayValue ?? []).compactMap(\.stringValue))
        let pad = String(repeating: "  ", count: indent + 1)
        var lines = ["{"]
        for name in properties.keys.sorted() {
            let property = properties[name]!
            if let description = property["description"]?.stringValue {
                lines.append(pad + "/** " + description.replacing("*/", with: "* /").split(separator: "\n").joined(separator: " ") + " */")
            }
            let optional = allOptional || !required.contains(name) ? "?" : ""
            lines.append(pad + TypeScriptDeclarations.propertyName(name) + optional + ": " + type(of: property, indent: indent + 1) + ";")
        }
        lines.append(String(repeating: "  ", count: indent) + "}")
        return lines.joined(separator: "\n")
    }

    /// `export declare namespace TodoDefs { ... }` with every `$defs` entry; nil when there is none.
    func namespaceDeclaration() -> String? {
        guard !defs.isEmpty else { return nil }
        var lines = ["export declare namespace \(namespace) {"]
        for name in defs.keys.sorted() {
            let schema = defs[name]!
            if let body = objectBody(schema, indent: 1), schema["additionalProperties"]?.objectValue == nil {
                lines.append("  export interface \(Self.definitionName(name)) \(body)")
            } else {
                lines.append("  export type \(Self.definitionName(name)) = \(type(of: schema, indent: 1));")
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    private func single(_ type: String, _ members: [String: JSON], indent: Int) -> String {
        switch type {
        case "string": return "string"
        case "integer", "number": return "number"
        case "boolean": return "boolean"
        case "null": return "null"
        case "array":
            let element = members["items"].map { self.type(of: $0, indent: indent) } ?? "unknown"
            return Self.isSimple(element) ? element + "[]" : "Array<\(element)>"
        case "object": return object(.object(members), indent: indent)
        default: return "unknown"
        }
    }

    /// Members, a map (`additionalProperties`: a schema), or both; closed with no member: `Record<string, never>`.
    private func object(_ schema: JSON, indent: Int) -> String {
        let additional = schema["additionalProperties"]
        let map: String? = switch additional {
        case .bool(false)?: nil
        case .object?: "{ [member: string]: \(type(of: additional!, indent: indent)) }"
        default: "{ [member: string]: unknown }"
        }
        let hasMembers = !(schema["properties"]?.objectValue?.isEmpty ?? true)
        guard hasMembers, let body = objectBody(schema, indent: indent) else {
            return map ?? "Record<string, never>"
        }
        // An open object's other members need no mention: TypeScript's object types are open.
        if case .object? = additional, let map { return body + " & " + map }
        return body
    }

    private func reference(_ ref: String) -> String {
        let prefix = "#/$defs/"
        guard ref.hasPrefix(prefix) else { return "unknown" }
        let name = String(ref.dropFirst(prefix.count))
        return defs[name] == nil ? "unknown" : "\(namespace).\(Self.definitionName(name))"
    }

    /// A `$defs` name as a type name: an identifier that is not one of TypeScript's own.
    static func definitionName(_ name: String) -> String {
        let cleaned = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") ? $0 : "_" })
        let reserved: Set<String> = ["any", "unknown", "never", "string", "number", "boolean", "object", "symbol", "bigint", "undefined", "null", "void", "this"]
        return TypeScriptDeclarations.isIdentifier(cleaned) && !reserved.contains(cleaned) ? cleaned : "_" + cleaned
    }

    static func literalType(_ value: JSON) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .int, .double, .string: return String(decoding: JSONWriter.encode(value), as: UTF8.self)
        case .array, .object: return "unknown"
        }
    }

    /// The alternatives, each once; `unknown` absorbs the others.
    static func union(_ types: [String]) -> String {
        var seen: [String] = []
        for type in types where !seen.contains(type) { seen.append(type) }
        if seen.isEmpty || seen.contains("unknown") { return "unknown" }
        return seen.joined(separator: " | ")
    }

    /// A name, a dotted name or a literal: safe before `[]`.
    private static func isSimple(_ type: String) -> Bool {
        type.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "$" || $0 == "." }
    }
}

/// `describe`'s `args` shapes (every kind has them) as TypeScript types. An optional member may
/// be left out or `null`, as a Swift Optional decodes it.
enum ShapeTypes {
    /// An action's args object; no members: it takes none (`Record<string, never>`).
    static func arguments(_ fields: [JSONShape.Field], indent: Int) -> String {
        fields.isEmpty ? "Record<string, never>" : object(fields, indent: indent)
    }

    static func type(_ shape: JSONShape, indent: Int) -> String {
        switch shape {
        case .string: return "string"
        case .integer, .number: return "number"
        case .boolean: return "boolean"
        case .any: return "unknown"
        case .array(let element):
            let type = type(element, indent: indent)
            return type.allSatisfy({ $0.isLetter }) ? type + "[]" : "Array<\(type)>"
        // An object that read no member by name is a map, or a type the probe could not follow.
        case .object(let fields): return fields.isEmpty ? "{ [member: string]: unknown }" : object(fields, indent: indent)
        }
    }

    private static func object(_ fields: [JSONShape.Field], indent: Int) -> String {
        let pad = String(repeating: "  ", count: indent + 1)
        let members = fields.sorted { $0.name < $1.name }.map { field in
            let name = TypeScriptDeclarations.propertyName(field.name)
            return field.isOptional
                ? pad + name + "?: " + type(field.shape, indent: indent + 1) + " | null;"
                : pad + name + ": " + type(field.shape, indent: indent + 1) + ";"
        }
        return (["{"] + members + [String(repeating: "  ", count: indent) + "}"]).joined(separator: "\n")
    }
}
