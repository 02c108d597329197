import Testing
import TetherContract
import TetherJSON

/// The JSON Schema recorded for the types contracts use (issue 31's design, the table
/// of Swift types and their schemas).
@Suite("JSON Schema of contract types")
struct SchemaTests {
    struct Scalars: Codable {
        var count: Int
        var small: Int8
        var large: UInt64
        var ratio: Double
        var single: Float
        var name: String
        var open: Bool
    }

    /// An `Int`: a larger number is refused for its shape, so the schema says so.
    static let int64: JSON = ["type": "integer", "minimum": .int(Int.min), "maximum": .int(Int.max)]

    /// Integers carry their type's bounds; a UInt64 stops at Int.max, the largest integer JSON
    /// decoding keeps exact.
    @Test func scalarsAreTheirJSONTypes() {
        let schema = JSONSchemaRecorder().schema(of: Scalars.self)
        #expect(schema == [
            "type": "object", "additionalProperties": false,
            "properties": [
                "count": Self.int64, "small": ["type": "integer", "minimum": -128, "maximum": 127],
                "large": ["type": "integer", "minimum": 0, "maximum": .int(Int.max)],
                "ratio": ["type": "number"], "single": ["type": "number"],
                "name": ["type": "string"], "open": ["type": "boolean"],
            ],
            "required": ["count", "small", "large", "ratio", "single", "name", "open"],
        ])
    }

    struct Collections: Codable {
        var names: [String]
        var gaps: [String?]
        var grid: [[Int]]
        var totals: [String: Int]
        var byNumber: [Int: Bool]
        var free: JSON
    }

    @Test func arraysDictionariesAndJSON() {
        let properties = JSONSchemaRecorder().schema(of: Collections.self)["properties"]
        #expect(properties?["names"] == ["type": "array", "items": ["type": "string"]])
        #expect(properties?["gaps"] == ["type": "array", "items": ["type": ["string", "null"]]])
        #expect(properties?["grid"] == ["type": "array", "items": ["type": "array", "items": Self.int64]])
        #expect(properties?["totals"] == ["type": "object", "additionalProperties": Self.int64])
        #expect(properties?["byNumber"] == ["type": "object", "additionalProperties": ["type": "boolean"]], "Int keys are member names too")
        #expect(properties?["free"] == [:], "a JSON member is any value")
    }

    struct Item: Codable, Equatable {
        var id: String
        var note: String?
    }

    struct Holder: Codable {
        var first: Item
        var items: [Item]
        var byID: [String: Item]
        var maybe: Item?
    }

    @Test func nestedStructsAreDefinitionsReferencedOnce() {
        let recorder = JSONSchemaRecorder()
        let schema = recorder.schema(of: Holder.self)
        let ref: JSON = ["$ref": "#/$defs/Item"]
        #expect(schema["properties"]?["first"] == ref)
        #expect(schema["properties"]?["items"] == ["type": "array", "items": ref])
        #expect(schema["properties"]?["byID"] == ["type": "object", "additionalProperties": ref])
        #expect(schema["properties"]?["maybe"] == ["anyOf": [ref, ["type": "null"]]])
        #expect(schema["required"] == ["first", "items", "byID"])
        #expect(recorder.definitions == ["Item": [
            "type": "object", "additionalProperties": false, "required": ["id"],
            "properties": ["id": ["type": "string"], "note": ["type": ["string", "null"]]],
        ]], "a nested optional member may be absent or null")
    }

    enum Suit: String, Codable, CaseIterable { case hearts, spades }
    enum Level: Int, Codable, CaseIterable { case low = 1, high = 3 }

    struct Cards: Codable {
        var suit: Suit
        var level: Level
        var trump: Suit?
    }

    @Test func caseIterableEnumsListTheirValues() {
        let properties = JSONSchemaRecorder().schema(of: Cards.self)["properties"]
        #expect(properties?["suit"] == ["type": "string", "enum": ["hearts", "spades"]])
        #expect(properties?["level"] == ["type": "integer", "enum": [1, 3]])
        #expect(properties?["trump"] == ["type": ["string", "null"], "enum": ["hearts", "spades", nil]])
    }

    final class Node: Codable {
        var name = ""
        var children: [Node] = []
    }

    @Test func recursiveTypesEndInAReference() {
        let recorder = JSONSchemaRecorder()
        let schema = recorder.schema(of: Node.self)
        #expect(schema["properties"]?["children"] == ["type": "array", "items": ["$ref": "#/$defs/Node"]])
        #expect(recorder.definitions["Node"] == schema)
    }
}
