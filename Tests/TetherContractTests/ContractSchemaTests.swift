import Testing
import TetherContract
import TetherJSON

/// A contract written by hand (no macro), as the server and `describe` see it.
enum TallyContract: Contract {
    struct State: Codable, Sendable, Equatable {
        var count = 0
        var label: String? = nil
        var history: [Int] = []
    }
    struct Views: Codable, Sendable, Equatable {
        var mine: Int? = nil
    }
    struct Presence: Codable, Sendable, Equatable {
        var name: String?
    }
    struct AddArgs: Codable, Sendable, Equatable {
        var by: Int?
    }
    enum Failure: String, ContractFailure {
        case overflow, full
        var code: RefusalCode { self == .full ? .tooLarge : .invalidArgs }
        var message: String { self == .full ? "the tally is full" : "count would overflow" }
    }

    static let kind = "tally"
    static let add = ContractAction<TallyContract, AddArgs>("add")
    static let reset = ContractAction<TallyContract, NoArgs>("reset")
    static var actionList: [AnyContractAction] { [.init(add), .init(reset)] }
    static var defaultState: State? { State() }
}

@Suite("A contract's schema document and fingerprint")
struct ContractSchemaTests {
    static let int64: JSON = ["type": "integer", "minimum": .int(Int.min), "maximum": .int(Int.max)]
    static let optionalInt64: JSON = ["type": ["integer", "null"], "minimum": .int(Int.min), "maximum": .int(Int.max)]

    @Test func theDocumentDescribesStateViewsPresenceActionsAndErrors() {
        let schema = ContractSchema(TallyContract.self)
        #expect(schema.document == [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "state": [
                "type": "object", "additionalProperties": false, "required": ["count", "history", "label"],
                "properties": [
                    "count": ["type": "integer", "minimum": .int(Int.min), "maximum": .int(Int.max), "default": 0],
                    "label": ["type": ["string", "null"]],
                    "history": ["type": "array", "items": Self.int64, "default": []],
                ],
            ],
            "views": ["type": "object", "additionalProperties": false, "properties": ["mine": Self.optionalInt64]],
            "presence": ["type": "object", "additionalProperties": false, "properties": ["name": ["type": ["string", "null"]]]],
            "actions": [
                "add": ["type": "object", "additionalProperties": false, "properties": ["by": Self.optionalInt64]],
                "reset": ["type": "object", "additionalProperties": false, "properties": [:]],
            ],
            "errors": ["overflow": ["code": "invalid_args"], "full": ["code": "too_large"]],
            "$defs": [:],
        ])
        #expect(schema.stateNames == ["count", "history", "label"])
        #expect(schema.viewNames == ["mine"])
    }

    @Test func theFingerprintIsTheSHA256OfTheCanonicalForm() {
        let schema = ContractSchema(TallyContract.self)
        #expect(schema.fingerprint == "sha256:" + SHA256.hex(JSONWriter.encode(CanonicalSchema.canonical(schema.document))))
        #expect(schema.fingerprint.count == 7 + 64)
        #expect(CanonicalSchema.canonical(schema.document)["state"]?["properties"]?["count"] == Self.int64, "no default")
    }

    @Test func aContractWithoutViewsPresenceOrFailuresHasTheirNeutralSchemas() {
        enum Bare: Contract {
            struct State: Codable, Sendable, Equatable { var on = false }
            static let kind = "bare"
            static var actionList: [AnyContractAction] { [] }
        }
        let document = ContractSchema(Bare.self).document
        #expect(document["views"] == ["type": "object", "additionalProperties": false, "properties": [:]])
        #expect(document["presence"] == ["type": "object"], "any JSON object")
        #expect(document["errors"] == [:])
        #expect(document["actions"] == [:])
    }
}
