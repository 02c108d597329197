import SwiftDiagnostics

/// What `@Contract` refuses, raised at the offending line: the macro only sees syntax, so the
/// common mistakes are its own errors rather than the compiler's, deep in the expansion.
struct ContractDiagnostic: DiagnosticMessage {
    let message: String
    let id: String
    var severity: DiagnosticSeverity { .error }
    var diagnosticID: MessageID { MessageID(domain: "TetherContractMacros", id: id) }

    static let notAnEnum = Self(message: "@Contract applies to a caseless enum", id: "notAnEnum")
    static let hasCases = Self(message: "a contract enum has no cases: it is a namespace", id: "hasCases")
    static let kindNotLiteral = Self(message: "@Contract takes the kind name as a string literal, e.g. @Contract(\"counter\")", id: "kindNotLiteral")
    static let missingState = Self(message: "a contract declares its published document as a nested 'struct State'", id: "missingState")
    static let customCodingKeys = Self(message: "a contract's State and Views cannot rename members with CodingKeys: the Swift name is the JSON name", id: "customCodingKeys")

    static func notVar(_ type: String) -> Self {
        Self(message: "\(type) members are stored 'var's: a 'let' with a value is not decoded", id: "notVar")
    }
    static func untyped(_ type: String, _ name: String) -> Self {
        Self(message: "\(type) member '\(name)' needs a type annotation (the macro sees syntax, not types)", id: "untyped")
    }
    static func noDefault(_ name: String) -> Self {
        Self(message: "State member '\(name)' needs a default value: it is what a client shows before the snapshot", id: "noDefault")
    }
    static func viewNotOptional(_ name: String) -> Self {
        Self(message: "Views member '\(name)' must be Optional: nil leaves it out of the viewer's document", id: "viewNotOptional")
    }
    static func sharedName(_ name: String) -> Self {
        Self(message: "'\(name)' is both a State and a Views member: a document has one member of each name", id: "sharedName")
    }
    static let actionsNotFunctions = Self(message: "protocol Actions holds only action methods", id: "actionsNotFunctions")
    static func reservedName(_ name: String) -> Self {
        Self(message: "action '\(name)' has the name of a member @Contract writes; rename it", id: "reservedName")
    }
    static func unsupportedAction(_ name: String, _ why: String) -> Self {
        Self(message: "action '\(name)' \(why)", id: "unsupportedAction")
    }
}
