import Testing
import TetherClient
import TetherContract
import TetherDemoContracts
import TetherJSON
import TetherTestSupport

/// `ContractComparison`: what a client's contract has beyond or against the server's, named.
@Suite("Comparing a client's contract with the server's")
struct ContractComparisonTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let client: JSON
        let server: JSON
        let additions: [String]
        let conflicts: [String]
        var testDescription: String { name }
    }

    static let counter = ContractSchema(CounterContract.self).document

    static let rows: [Row] = [
        Row(name: "the same contract", client: counter, server: counter, additions: [], conflicts: []),
        Row(name: "a default and a doc comment changed", client: annotated(counter), server: counter, additions: [], conflicts: []),
        Row(name: "the server has more", client: ContractSchema(SmallerCounter.self).document, server: counter,
            additions: [#"action "decrement""#, #"action "reset""#, #"error "overflow""#], conflicts: []),
        Row(name: "the client has more", client: ContractSchema(ExtendedCounter.self).document, server: counter,
            additions: [],
            conflicts: [#"action "double": the server has none"#, #"state member "label": the server has none"#, #"view member "mine": the server has none"#]),
        Row(name: "a state member retyped", client: ContractSchema(RetypedCounter.self).document, server: counter,
            additions: [#"action "decrement""#, #"action "reset""#, #"error "overflow""#],
            conflicts: [#"argument "by" of action "increment": client string or null, server integer or null"#,
                        #"state member "count": client string, server integer"#]),
        Row(name: "the server requires an argument the client has not", client: ContractSchema(BareCounter.self).document,
            server: ContractSchema(StrictCounter.self).document,
            additions: [], conflicts: [#"argument "by" of action "increment": the server requires it, the client has none"#]),
        Row(name: "an argument the server has not", client: ContractSchema(StrictCounter.self).document,
            server: ContractSchema(BareCounter.self).document,
            additions: [], conflicts: [#"argument "by" of action "increment": the server has none"#]),
        Row(name: "an optional argument more on the server", client: ContractSchema(BareCounter.self).document,
            server: ContractSchema(SmallerCounter.self).document,
            additions: [#"argument "by" of action "increment""#], conflicts: []),
        Row(name: "views and presence the server adds", client: ContractSchema(SmallerCounter.self).document,
            server: ContractSchema(ExtendedCounter.self).document,
            additions: [#"action "decrement""#, #"action "double""#, #"action "reset""#, #"error "overflow""#,
                        #"state member "label""#, #"view member "mine""#],
            conflicts: []),
    ]

    @Test(arguments: rows)
    func comparison(_ row: Row) {
        let comparison = ContractComparison(client: row.client, server: row.server)
        #expect(comparison.additions == row.additions)
        #expect(comparison.conflicts == row.conflicts)
        #expect(comparison.isCompatible == row.conflicts.isEmpty)
    }

    @Test func anActionTheServerLacksIsNamedAsMissing() {
        let comparison = ContractComparison(client: ContractSchema(ExtendedCounter.self).document, server: Self.counter)
        #expect(comparison.missingActions == ["double"])
    }

    @Test func typedPresenceFitsAServerThatTakesAnyObjectButNotTheReverse() {
        let named = ContractSchema(NamedCounter.self).document
        #expect(ContractComparison(client: named, server: Self.counter).conflicts.isEmpty)
        let reverse = ContractComparison(client: Self.counter, server: named)
        #expect(reverse.conflicts.count == 1)
        #expect(reverse.conflicts.first?.hasPrefix("presence: client ") == true, "\(reverse.conflicts)")
    }

    /// Properties: a schema compared with itself has nothing to say; the server adding State
    /// members, actions and optional arguments never makes the client incompatible, and each
    /// addition is listed.
    @Test(arguments: 1...40)
    func selfMatchesAndAddingIsCompatible(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let client = Self.randomDocument(using: &rng)
        let same = ContractComparison(client: client, server: client)
        #expect(same.additions.isEmpty && same.conflicts.isEmpty, "seed \(seed)")

        var server = client
        var added: [String] = []
        for index in 0..<Int.random(in: 1...3, using: &rng) {
            switch Int.random(in: 0..<3, using: &rng) {
            case 0:
                server.set(JSONPointer(tokens: ["state", "properties", "added\(index)"]), to: Self.randomType(using: &rng))
                added.append(#"state member "added\#(index)""#)
            case 1:
                server.set(JSONPointer(tokens: ["actions", "added\(index)"]), to: Self.object(["x": Self.randomType(using: &rng)], required: []))
                added.append(#"action "added\#(index)""#)
            default:
                guard let action = client["actions"]?.objectValue?.keys.sorted().first else { continue }
                server.set(JSONPointer(tokens: ["actions", action, "properties", "added\(index)"]), to: Self.randomType(using: &rng))
                added.append(#"argument "added\#(index)" of action "\#(action)""#)
            }
        }
        let grown = ContractComparison(client: client, server: server)
        #expect(grown.isCompatible, "seed \(seed): \(grown.conflicts)")
        #expect(grown.additions == added.sorted(), "seed \(seed)")
    }

    // MARK: Generators

    static let leafTypes: [JSON] = ["string", "integer", "number", "boolean", ["integer", "null"], ["string", "null"]]

    static func randomType(using rng: inout SeededGenerator) -> JSON {
        Bool.random(using: &rng) ? ["type": leafTypes.randomElement(using: &rng)!] : ["type": "array", "items": ["type": leafTypes.randomElement(using: &rng)!]]
    }

    static func object(_ properties: [String: JSON], required: [String]) -> JSON {
        var object: JSON = ["type": "object", "properties": .object(properties), "additionalProperties": false]
        if !required.isEmpty { object.set("/required", to: .array(required.sorted().map(JSON.string))) }
        return object
    }

    static func randomDocument(using rng: inout SeededGenerator) -> JSON {
        func members(_ prefix: String) -> [String: JSON] {
            Dictionary(uniqueKeysWithValues: (0..<Int.random(in: 0...4, using: &rng)).map { ("\(prefix)\($0)", randomType(using: &rng)) })
        }
        let state = members("s")
        var actions: [String: JSON] = [:]
        for index in 0..<Int.random(in: 1...3, using: &rng) {
            let args = members("a")
            actions["act\(index)"] = object(args, required: args.keys.filter { _ in Bool.random(using: &rng) })
        }
        return ["state": object(state, required: Array(state.keys)), "views": object([:], required: []), "presence": ["type": "object"],
                "actions": .object(actions), "errors": [:]]
    }

    /// `document` with a default and a description on `count`: annotations, not meaning.
    static func annotated(_ document: JSON) -> JSON {
        var document = document
        document.set("/state/properties/count/default", to: 5)
        document.set("/state/properties/count/description", to: "How many times it was pressed.")
        return document
    }
}
