import Testing
import TetherContract
import TetherJSON

@Suite("Canonical form and SHA-256")
struct CanonicalFormTests {
    /// FIPS 180-4 examples (NIST CSRC "Examples with intermediate values": SHA-256 one-block,
    /// two-block) and the empty message.
    @Test(arguments: [
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ])
    func sha256MatchesTheFIPSVectors(message: String, digest: String) {
        #expect(SHA256.hex(Array(message.utf8)) == digest)
    }

    @Test func sha256OfAMillionAs() {
        #expect(SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    static let document: JSON = [
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "state": [
            "type": "object", "required": ["title", "items"], "additionalProperties": false,
            "properties": ["title": ["type": "string"], "items": ["type": "array", "items": ["$ref": "#/$defs/Item"]]],
        ],
        "actions": ["add": ["type": "object", "properties": ["title": ["type": "string"]], "required": ["title"]]],
        "$defs": ["Item": ["type": "object", "properties": ["id": ["type": "string"], "kind": ["enum": ["b", "a"]]]]],
    ]

    @Test func annotationsDefinitionNamesAndOrderDoNotCount() {
        let annotated: JSON = [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "state": [
                "type": "object", "required": ["items", "title"], "additionalProperties": false, "description": "the list",
                "properties": [
                    "title": ["type": "string", "default": "groceries", "title": "Title"],
                    "items": ["type": "array", "items": ["$ref": "#/$defs/TodoItem", "$comment": "renamed"], "default": []],
                ],
            ],
            "actions": ["add": ["type": "object", "properties": ["title": ["type": "string", "description": "what"]], "required": ["title"]]],
            "$defs": ["TodoItem": ["type": "object", "properties": ["id": ["type": "string"], "kind": ["enum": ["a", "b"]]]]],
        ]
        #expect(CanonicalSchema.canonical(annotated) == CanonicalSchema.canonical(Self.document))
        #expect(CanonicalSchema.fingerprint(annotated) == CanonicalSchema.fingerprint(Self.document))
    }

    @Test func theCanonicalFormInlinesDefinitionsAndKeepsMembersNamedLikeAnnotations() {
        let canonical = CanonicalSchema.canonical(Self.document)
        #expect(canonical["$defs"] == nil)
        #expect(canonical["state"]?["properties"]?["title"] == ["type": "string"], "a member called title is not an annotation")
        #expect(canonical["state"]?["properties"]?["items"]?["items"] == ["type": "object", "properties": ["id": ["type": "string"], "kind": ["enum": ["a", "b"]]]])
        #expect(String(decoding: CanonicalSchema.bytes(["state": ["type": "integer", "default": 1]]), as: UTF8.self) == #"{"state":{"type":"integer"}}"#)
    }

    @Test func aChangeOfMeaningChangesTheFingerprint() {
        var retyped = Self.document
        retyped = Self.replacing(retyped, ["state", "properties", "title"], with: ["type": "integer"])
        #expect(CanonicalSchema.fingerprint(retyped) != CanonicalSchema.fingerprint(Self.document))
        let optional = Self.replacing(Self.document, ["state", "required"], with: ["items"])
        #expect(CanonicalSchema.fingerprint(optional) != CanonicalSchema.fingerprint(Self.document))
        let renamedAction = Self.replacing(Self.document, ["actions"], with: ["append": Self.document["actions"]!["add"]!])
        #expect(CanonicalSchema.fingerprint(renamedAction) != CanonicalSchema.fingerprint(Self.document))
    }

    @Test func recursiveDefinitionsStay() {
        let document: JSON = [
            "state": ["type": "object", "properties": ["root": ["$ref": "#/$defs/Node"]]],
            "$defs": ["Node": ["type": "object", "properties": ["children": ["type": "array", "items": ["$ref": "#/$defs/Node"]]]]],
        ]
        let canonical = CanonicalSchema.canonical(document)
        #expect(canonical["state"]?["properties"]?["root"]?["properties"]?["children"]?["items"] == ["$ref": "#/$defs/Node"])
        #expect(canonical["$defs"]?["Node"] != nil)
    }

    static func replacing(_ json: JSON, _ path: [String], with value: JSON) -> JSON {
        guard let key = path.first, case .object(var members) = json else { return value }
        members[key] = replacing(members[key] ?? nil, Array(path.dropFirst()), with: value)
        return .object(members)
    }
}
