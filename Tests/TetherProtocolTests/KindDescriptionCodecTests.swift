import Testing
import TetherJSON
import TetherProtocol

/// `describe`'s kind descriptions, with and without a contract's schema.
@Suite("Kind descriptions")
struct KindDescriptionCodecTests {
    static let counter = KindDescription(name: "counter", scope: "shared", actions: [
        .init(name: "decrement", arguments: []),
        .init(name: "increment", arguments: [.init(name: "by", shape: .integer, isOptional: true)]),
        .init(name: "reset", arguments: []),
    ])

    @Test func aKindWithoutAContractIsWrittenAsBefore() {
        let text = String(decoding: ServerMessage.description(id: 1, kinds: [Self.counter]).encoded(), as: UTF8.self)
        // What the server wrote before contracts existed, byte for byte (keys sorted).
        #expect(text == #"{"type":"description","id":1,"kinds":[{"actions":[{"args":{},"name":"decrement"},{"args":{"by":{"optional":true,"type":"integer"}},"name":"increment"},{"args":{},"name":"reset"}],"name":"counter","scope":"shared"}]}"#)
    }

    @Test func aKindWithAContractCarriesItsSchemaAndFingerprint() throws {
        var tally = Self.counter
        tally.schema = ["state": ["type": "object"]]
        tally.fingerprint = "sha256:ab"
        let bytes = ServerMessage.description(id: nil, kinds: [tally]).encoded()
        let kind = try JSONParser().parse(bytes)["kinds"]?[0]
        #expect(kind?["schema"] == ["state": ["type": "object"]])
        #expect(kind?["fingerprint"] == "sha256:ab")
        #expect(try ServerMessage.decode(bytes) == .description(id: nil, kinds: [tally]))
    }

    @Test func aDescriptionWithoutSchemaDecodesWithNone() throws {
        let text = #"{"type":"description","kinds":[{"name":"clock","scope":"shared","actions":[]}]}"#
        guard case .description(_, let kinds) = try ServerMessage.decode(Array(text.utf8)) else { Issue.record("not a description"); return }
        #expect(kinds.first?.schema == nil)
        #expect(kinds.first?.fingerprint == nil)
    }

    @Test(arguments: [#""schema":[1]"#, #""fingerprint":7"#])
    func aMistypedSchemaMemberIsABadMessage(member: String) {
        let text = #"{"type":"description","kinds":[{"name":"clock","scope":"shared","actions":[],"# + member + "}]}"
        #expect(throws: ProtocolError.self) { try ServerMessage.decode(Array(text.utf8)) }
    }
}
