import TetherJSON

/// The form of a contract's schema document that its fingerprint hashes: what a contract means,
/// not how it is written. Annotations (`default`, `description`, `title`, `$comment`) are
/// removed; `$ref`s are inlined so Swift type names do not count (a recursive type keeps its
/// `$defs` entry); `required`, `enum` and `type` lists are sorted. Written with Tether's
/// deterministic writer (keys sorted by UTF-8 bytes, no whitespace).
public enum CanonicalSchema {
    static let annotations: Set<String> = ["default", "description", "title", "$comment"]
    /// Members whose value is a map of names to schemas (the names are not keywords).
    static let schemaMaps: Set<String> = ["properties", "patternProperties", "$defs", "dependentSchemas"]
    static let schemaLists: Set<String> = ["anyOf", "oneOf", "allOf", "prefixItems"]
    static let sortedLists: Set<String> = ["required", "enum", "type"]
    /// Top-level members of `describe`'s `schema`, each a map of names to schemas.
    static let documentMaps: Set<String> = ["actions"]
    static let documentSchemas: Set<String> = ["state", "views", "presence"]

    /// The canonical form of a `describe` schema document (`ContractSchema.document`).
    public static func canonical(_ document: JSON) -> JSON {
        guard case .object(let members) = document else { return document }
        var walker = Walker(definitions: members["$defs"]?.objectValue ?? [:])
        var result: [String: JSON] = [:]
        for (key, value) in members where key != "$defs" {
            if documentSchemas.contains(key) {
                result[key] = walker.schema(value, expanding: [])
            } else if documentMaps.contains(key), case .object(let named) = value {
                result[key] = .object(named.mapValues { walker.schema($0, expanding: []) })
            } else {
                result[key] = value
            }
        }
        // Recursive types keep their definition, itself canonical (which may keep others).
        var kept: [String: JSON] = [:]
        while let name = walker.recursive.subtracting(kept.keys).sorted().first {
            kept[name] = walker.schema(walker.definitions[name] ?? [:], expanding: [name])
        }
        if !kept.isEmpty { result["$defs"] = .object(kept) }
        return .object(result)
    }

    /// The canonical form's bytes.
    public static func bytes(_ document: JSON) -> [UInt8] { JSONWriter.encode(canonical(document)) }

    /// `"sha256:"` and the SHA-256 of the canonical form, in hex.
    public static func fingerprint(_ document: JSON) -> String { "sha256:" + SHA256.hex(bytes(document)) }

    private struct Walker {
        let definitions: [String: JSON]
        /// Definitions met inside themselves: they stay `$ref`s.
        var recursive: Set<String> = []

        init(definitions: [String: JSON]) { self.definitions = definitions }

        mutating func schema(_ schema: JSON, expanding: Set<String>) -> JSON {
            guard case .object(var members) = schema else { return schema }
            var inlined: [String: JSON] = [:]
            if case .string(let ref)? = members["$ref"], ref.hasPrefix("#/$defs/"), let definition = definitions[String(ref.dropFirst(8))] {
                let name = String(ref.dropFirst(8))
                if expanding.contains(name) {
                    recursive.insert(name)
                } else {
                    // The definition, canonical, under the referring object's own keywords.
                    members["$ref"] = nil
                    inlined = self.schema(definition, expanding: expanding.union([name])).objectValue ?? [:]
                }
            }
            var result: [String: JSON] = [:]
            for (key, value) in members where !annotations.contains(key) {
                if schemaMaps.contains(key), case .object(let named) = value {
                    result[key] = .object(named.mapValues { self.schema($0, expanding: expanding) })
                } else if schemaLists.contains(key), case .array(let items) = value {
                    result[key] = .array(items.map { self.schema($0, expanding: expanding) })
                } else if sortedLists.contains(key), case .array(let items) = value {
                    result[key] = .array(items.sorted { JSONWriter.encode($0).lexicographicallyPrecedes(JSONWriter.encode($1)) })
                } else if case .object = value {
                    // items, additionalProperties, not, contains, if/then/else, propertyNames.
                    result[key] = self.schema(value, expanding: expanding)
                } else {
                    result[key] = value
                }
            }
            return .object(result.merging(inlined) { own, _ in own })
        }
    }
}
