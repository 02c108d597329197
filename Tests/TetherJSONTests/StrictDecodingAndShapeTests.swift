import Testing
import TetherJSON

private struct Step: Decodable { var by: Int? }
private struct Entry: Decodable { var key: String; var value: JSON }
private struct Inner: Decodable { var x: Double; var flag: Bool? }
private struct Outer: Decodable { var names: [String]; var inner: Inner; var count: UInt8 }

private func strict<T: Decodable>(_ type: T.Type, _ json: JSON) throws -> T {
    var decoder = JSONValueDecoder()
    decoder.rootPath = ["args"]
    decoder.rejectsUnknownKeys = true
    return try decoder.decode(type, from: json)
}

private func message(_ body: () throws -> Void) -> String? {
    do { try body() } catch let error as DecodingError {
        if case .dataCorrupted(let context) = error { return context.debugDescription }
        return "\(error)"
    } catch { return "\(error)" }
    return nil
}

@Suite("Strict decoding and shapes")
struct StrictDecodingAndShapeTests {
    @Test func unknownFieldsAreNamedWhenStrict() throws {
        #expect(try strict(Step.self, ["by": 2]).by == 2)
        #expect(try strict(Step.self, [:]).by == nil)
        let bogus = message { _ = try strict(Step.self, ["bogus": 1]) }
        #expect(bogus == "unknown field args.bogus (known: by)")
        let nested = message { _ = try strict(Outer.self, ["names": [], "count": 1, "inner": ["x": 1, "y": 2]]) }
        #expect(nested == "unknown field args.inner.y (known: flag, x)")
        // Lenient decoding (the default) still ignores them.
        #expect(try JSONValueDecoder().decode(Step.self, from: ["by": 1, "bogus": 1]).by == 1)
        // A JSON field takes anything below it.
        #expect(try strict(Entry.self, ["key": "k", "value": ["deep": ["x": 1]]]).key == "k")
    }

    @Test func shapesDescribeWhatATypeReads() {
        #expect(JSONShape.of(Step.self) == .object([.init(name: "by", shape: .integer, isOptional: true)]))
        #expect(JSONShape.of(Entry.self) == .object([
            .init(name: "key", shape: .string, isOptional: false), .init(name: "value", shape: .any, isOptional: false),
        ]))
        #expect(JSONShape.of(Outer.self) == .object([
            .init(name: "names", shape: .array(of: .string), isOptional: false),
            .init(name: "inner", shape: .object([
                .init(name: "x", shape: .number, isOptional: false), .init(name: "flag", shape: .boolean, isOptional: true),
            ]), isOptional: false),
            .init(name: "count", shape: .integer, isOptional: false),
        ]))
        #expect(JSONShape.fieldsJSON([.init(name: "by", shape: .integer, isOptional: true)]) == ["by": ["type": "integer", "optional": true]])
    }
}
