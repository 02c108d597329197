import TetherContract
import TetherJSON

/// How a client's contract schema differs from the server's (two `describe` schema documents,
/// `ContractSchema.document`), compared in their canonical form (`CanonicalSchema`) so that doc
/// comments, defaults and Swift type names do not count.
///
/// What the server has beyond the client is compatible: a State or Views member, an action, an
/// optional argument or presence member, an error. What the client relies on and the server
/// does not have as it has it is a conflict: a member or action the server lacks, a member of
/// another type, an argument the server requires and the client may leave out.
public struct ContractComparison: Hashable, Sendable {
    /// What the server has that the client does not (`action "double"`), sorted.
    public let additions: [String]
    /// What does not fit, each naming what and how (`state member "count": client integer, server string`).
    public let conflicts: [String]
    /// The client's actions the server does not have: sending one fails as `unknown_action`.
    public let missingActions: Set<String>

    public var isCompatible: Bool { conflicts.isEmpty }

    public init(client: JSON, server: JSON) {
        let client = CanonicalSchema.canonical(client)
        let server = CanonicalSchema.canonical(server)
        var found = Found()
        for section in [(key: "state", name: "state member"), (key: "views", name: "view member")] {
            found.compareReceived(client[section.key], server[section.key], naming: { "\(section.name) \"\($0)\"" })
        }
        found.compareSent(client["presence"], server["presence"], whole: "presence", naming: { "presence member \"\($0)\"" })
        let clientActions = client["actions"]?.objectValue ?? [:]
        let serverActions = server["actions"]?.objectValue ?? [:]
        for (name, clientArgs) in clientActions {
            guard let serverArgs = serverActions[name] else {
                found.conflicts.append("action \"\(name)\": the server has none")
                found.missingActions.insert(name)
                continue
            }
            found.compareSent(clientArgs, serverArgs, whole: "arguments of action \"\(name)\"",
                              naming: { "argument \"\($0)\" of action \"\(name)\"" })
        }
        found.additions += serverActions.keys.filter { clientActions[$0] == nil }.map { "action \"\($0)\"" }
        // A refusal the client does not know still arrives, as an untyped server error.
        let clientErrors = client["errors"]?.objectValue ?? [:]
        found.additions += (server["errors"]?.objectValue ?? [:]).keys.filter { clientErrors[$0] == nil }.map { "error \"\($0)\"" }
        additions = found.additions.sorted()
        conflicts = found.conflicts.sorted()
        missingActions = found.missingActions
    }

    private struct Found {
        var additions: [String] = []
        var conflicts: [String] = []
        var missingActions: Set<String> = []

        /// An object the server sends (State, Views): every member the client reads must be there, alike.
        mutating func compareReceived(_ client: JSON?, _ server: JSON?, naming: (String) -> String) {
            let clientMembers = Self.properties(client) ?? [:]
            let serverMembers = Self.properties(server) ?? [:]
            for (name, schema) in clientMembers {
                guard let serverSchema = serverMembers[name] else {
                    conflicts.append("\(naming(name)): the server has none")
                    continue
                }
                if schema != serverSchema { conflicts.append("\(naming(name)): \(Self.versus(schema, serverSchema))") }
            }
            additions += serverMembers.keys.filter { clientMembers[$0] == nil }.map(naming)
        }

        /// An object the client sends (arguments, presence): the server must take every member
        /// the client may send, and must not require one the client may leave out.
        mutating func compareSent(_ client: JSON?, _ server: JSON?, whole: String, naming: (String) -> String) {
            // A server that takes any object (`AnyPresence`) takes whatever object the client sends.
            if server == ["type": "object"], client?["type"] == "object" { return }
            guard let clientMembers = Self.properties(client), let serverMembers = Self.properties(server) else {
                // Not both objects of known members (`AnyPresence` is any object): compared whole.
                if client != server { conflicts.append("\(whole): \(Self.versus(client ?? .null, server ?? .null))") }
                return
            }
            let clientRequired = Self.required(client)
            let serverRequired = Self.required(server)
            for (name, schema) in clientMembers {
                guard let serverSchema = serverMembers[name] else {
                    conflicts.append("\(naming(name)): the server has none")
                    continue
                }
                if schema != serverSchema {
                    conflicts.append("\(naming(name)): \(Self.versus(schema, serverSchema))")
                } else if serverRequired.contains(name), !clientRequired.contains(name) {
                    conflicts.append("\(naming(name)): the server requires it, the client may leave it out")
                }
            }
            for name in serverMembers.keys where clientMembers[name] == nil {
                if serverRequired.contains(name) {
                    conflicts.append("\(naming(name)): the server requires it, the client has none")
                } else {
                    additions.append(naming(name))
                }
            }
        }

        static func properties(_ schema: JSON?) -> [String: JSON]? { schema?["properties"]?.objectValue }

        static func required(_ schema: JSON?) -> Set<String> {
            Set((schema?["required"]?.arrayValue ?? []).compactMap(\.stringValue))
        }

        /// "client integer, server string"; the schemas themselves when their types read the same.
        static func versus(_ client: JSON, _ server: JSON) -> String {
            let (clientType, serverType) = (typeName(client), typeName(server))
            if clientType != serverType { return "client \(clientType), server \(serverType)" }
            return "client \(client.jsonString), server \(server.jsonString)"
        }

        /// `integer`, `string or null`; `schema` when it states no `type`.
        static func typeName(_ schema: JSON) -> String {
            switch schema["type"] {
            case .string(let type)?: return type
            case .array(let types)?:
                let names = types.compactMap(\.stringValue)
                return (names.filter { $0 != "null" } + names.filter { $0 == "null" }).joined(separator: " or ")  // "string or null"
            default: return "schema"
            }
        }
    }
}
