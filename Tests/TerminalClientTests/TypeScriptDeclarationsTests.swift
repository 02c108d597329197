import Testing
import TetherJSON
import TetherProtocol
@testable import tether

/// `tether codegen typescript`'s generator, without a server: JSON Schema and `args` shapes as
/// TypeScript, names, and the registration with tether.d.ts.
@Suite("TypeScript declarations")
struct TypeScriptDeclarationsTests {
    @Test func kindNamesArePascalCase() {
        #expect(TypeScriptDeclarations.pascalCase("counter") == "Counter")
        #expect(TypeScriptDeclarations.pascalCase("tether.server") == "TetherServer")
        #expect(TypeScriptDeclarations.pascalCase("bench") == "Bench")
        #expect(TypeScriptDeclarations.pascalCase("todo-list_v2") == "TodoListV2")
        #expect(TypeScriptDeclarations.pascalCase("2fa") == "Kind2fa")
        #expect(TypeScriptDeclarations.pascalCase("...") == "Kind")
        #expect(TypeScriptDeclarations.typeNames(for: ["a.b", "a-b", "ab", "AB"]) == ["AB": "AB", "a-b": "AB2", "a.b": "AB3", "ab": "Ab"], "in the order of the names")
    }

    @Test func propertyNamesThatAreNotIdentifiersAreQuoted() {
        #expect(TypeScriptDeclarations.propertyName("count") == "count")
        #expect(TypeScriptDeclarations.propertyName("$_x9") == "$_x9")
        #expect(TypeScriptDeclarations.propertyName("first-name") == #""first-name""#)
        #expect(TypeScriptDeclarations.propertyName("9lives") == #""9lives""#)
        #expect(TypeScriptDeclarations.propertyName("") == #""""#)
        #expect(TypeScriptDeclarations.propertyName(#"a"b\c"#) == #""a\"b\\c""#)
    }

    @Test func schemaConstructsBecomeTypes() throws {
        let types = SchemaTypes(defs: ["Item": ["type": "object"], "string": ["type": "string"]], namespace: "TodoDefs")
        func ts(_ schema: String) throws -> String { types.type(of: try JSONParser().parse(schema), indent: 0) }
        #expect(try ts(#"{"type":"integer"}"#) == "number")
        #expect(try ts(#"{"type":"number"}"#) == "number")
        #expect(try ts(#"{"type":["string","null"]}"#) == "string | null")
        #expect(try ts(#"{"type":"boolean"}"#) == "boolean")
        #expect(try ts("{}") == "unknown")
        #expect(try ts(#"{"type":"array","items":{"type":"string"}}"#) == "string[]")
        #expect(try ts(#"{"type":["array","null"],"items":{"type":["integer","null"]}}"#) == "Array<number | null> | null")
        #expect(try ts(#"{"type":"array","items":{}}"#) == "unknown[]")
        #expect(try ts(#"{"type":"object","additionalProperties":{"type":"integer"}}"#) == "{ [member: string]: number }")
        #expect(try ts(#"{"type":"object"}"#) == "{ [member: string]: unknown }")
        #expect(try ts(#"{"type":"object","properties":{},"additionalProperties":false}"#) == "Record<string, never>")
        #expect(try ts(##"{"$ref":"#/$defs/Item"}"##) == "TodoDefs.Item")
        #expect(try ts(##"{"$ref":"#/$defs/string"}"##) == "TodoDefs._string", "a $defs name that is TypeScript's own is renamed")
        #expect(try ts(##"{"$ref":"#/$defs/Missing"}"##) == "unknown")
        #expect(try ts(##"{"anyOf":[{"$ref":"#/$defs/Item"},{"type":"null"}]}"##) == "TodoDefs.Item | null")
        #expect(try ts(#"{"type":"string","enum":["low","high"]}"#) == #""low" | "high""#)
        #expect(try ts(#"{"type":["string","null"],"enum":["a",null]}"#) == #""a" | null"#)
        #expect(try ts(#"{"type":"integer","enum":[1,2]}"#) == "1 | 2")
        #expect(try ts(#"{"type":"object","properties":{"by":{"type":["integer","null"]},"first-name":{"type":"string"}},"required":["first-name"],"additionalProperties":false}"#) == """
            {
              by?: number | null;
              "first-name": string;
            }
            """)
        #expect(try ts(#"{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"boolean","description":"Is it b? */"}},"required":["b"]}},"required":["a"]}"#) == """
            {
              a: {
                /** Is it b? * / */
                b: boolean;
              };
            }
            """)
    }

    @Test func shapesBecomeTypes() {
        #expect(ShapeTypes.arguments([], indent: 0) == "Record<string, never>")
        let fields: [JSONShape.Field] = [
            .init(name: "title", shape: .string, isOptional: false),
            .init(name: "tags", shape: .array(of: .string), isOptional: true),
            .init(name: "when", shape: .object([.init(name: "at", shape: .number, isOptional: false)]), isOptional: false),
            .init(name: "extra", shape: .any, isOptional: true),
            .init(name: "rows", shape: .array(of: .object([])), isOptional: false),
        ]
        #expect(ShapeTypes.arguments(fields, indent: 0) == """
            {
              extra?: unknown | null;
              rows: Array<{ [member: string]: unknown }>;
              tags?: string[] | null;
              title: string;
              when: {
                at: number;
              };
            }
            """)
    }

    /// A kind with a contract's schema: every declaration, and its registration.
    @Test func aKindWithASchema() throws {
        let text = TypeScriptDeclarations.generate([try counter()])
        #expect(text.contains("""
            export interface CounterState {
              count: number;
            }
            export interface CounterViews {}
            export type CounterPresence = { [member: string]: unknown };
            export type CounterError = "overflow";
            export type CounterActions = {
              decrement: Record<string, never>;
              increment: {
                by?: number | null;
              };
              reset: Record<string, never>;
            };
            export type CounterRoom = RemoteRoom<CounterState & CounterViews, CounterActions, CounterPresence, CounterError>;
            """), "\(text)")
        #expect(text.contains(#"import type { RemoteRoom } from "./tether.js";"#))
        #expect(text.contains("""
            declare module "./tether.js" {
              interface TetherKinds {
                "counter": { state: CounterState & CounterViews; actions: CounterActions; presence: CounterPresence; reason: CounterError };
              }
            }
            """), "\(text)")
        #expect(TypeScriptDeclarations.generate([try counter()], tetherModule: "../vendor/tether.js").contains(#"declare module "../vendor/tether.js" {"#))
    }

    /// Views are optional members; `$defs` go in the kind's namespace; a map is an index signature.
    @Test func viewsDefsAndMaps() throws {
        let schema = try JSONParser().parse(#"""
            {"state":{"type":"object","properties":{"items":{"type":"object","additionalProperties":{"$ref":"#/$defs/Item"}}},"required":["items"],"additionalProperties":false},
             "views":{"type":"object","properties":{"mine":{"type":["string","null"]}},"additionalProperties":false},
             "presence":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},
             "actions":{"add":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}},
             "errors":{},
             "$defs":{"Item":{"type":"object","properties":{"title":{"type":"string"},"next":{"anyOf":[{"$ref":"#/$defs/Item"},{"type":"null"}]}},"required":["title","next"],"additionalProperties":false}}}
            """#)
        let kind = KindDescription(name: "todo.list", scope: "shared", actions: [.init(name: "add", arguments: [])], schema: schema, fingerprint: "sha256:00")
        let text = TypeScriptDeclarations.generate([kind])
        #expect(text.contains("""
            export interface TodoListState {
              items: { [member: string]: TodoListDefs.Item };
            }
            export interface TodoListViews {
              mine?: string | null;
            }
            export type TodoListPresence = {
              name: string;
            };
            export type TodoListError = never;
            export type TodoListActions = {
              add: {
                title: string;
              };
            };
            """), "\(text)")
        #expect(text.contains("""
            export declare namespace TodoListDefs {
              export interface Item {
                next: TodoListDefs.Item | null;
                title: string;
              }
            }
            """), "\(text)")
    }

    /// A kind without a schema: a loose state, actions from their `args` shapes, any reason.
    @Test func aKindWithoutASchema() {
        let bench = KindDescription(name: "bench", scope: "shared", actions: [
            .init(name: "burst", arguments: [.init(name: "count", shape: .integer, isOptional: false)]),
            .init(name: "set-label", arguments: [.init(name: "label", shape: .string, isOptional: true)]),
        ])
        let quiet = KindDescription(name: "tether.server", scope: "shared", actions: [])
        let text = TypeScriptDeclarations.generate([quiet, bench])
        #expect(text.contains("""
            export type BenchState = { [member: string]: unknown };
            export type BenchActions = {
              burst: {
                count: number;
              };
              "set-label": {
                label?: string | null;
              };
            };
            export type BenchRoom = RemoteRoom<BenchState, BenchActions, { [member: string]: unknown }, string>;
            """), "\(text)")
        #expect(text.contains("export type TetherServerActions = {};"))
        #expect(text.contains("// Kinds: bench, tether.server."))
        #expect(text.contains(#""tether.server": { state: TetherServerState; actions: TetherServerActions; presence: { [member: string]: unknown }; reason: string };"#))
        #expect(!text.contains("BenchViews") && !text.contains("BenchError"))
    }

    /// The counter as `describe` sends it (Sources/TetherDemoContracts/CounterContract.swift).
    func counter() throws -> KindDescription {
        let schema = try JSONParser().parse(#"""
            {"$schema":"https://json-schema.org/draft/2020-12/schema",
             "state":{"type":"object","properties":{"count":{"type":"integer","default":0}},"required":["count"],"additionalProperties":false},
             "views":{"type":"object","properties":{},"additionalProperties":false},
             "presence":{"type":"object"},
             "actions":{"decrement":{"type":"object","properties":{},"additionalProperties":false},
                        "increment":{"type":"object","properties":{"by":{"type":["integer","null"]}},"additionalProperties":false},
                        "reset":{"type":"object","properties":{},"additionalProperties":false}},
             "errors":{"overflow":{"code":"invalid_args"}},
             "$defs":{}}
            """#)
        return KindDescription(name: "counter", scope: "shared", actions: [
            .init(name: "decrement", arguments: []),
            .init(name: "increment", arguments: [.init(name: "by", shape: .integer, isOptional: true)]),
            .init(name: "reset", arguments: []),
        ], schema: schema, fingerprint: "sha256:abc")
    }
}
