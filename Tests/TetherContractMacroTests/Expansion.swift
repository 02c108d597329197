import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosGenericTestSupport
import Testing
import TetherContractMacroKit

/// `assertMacroExpansion` for `@Contract`, its failures recorded as swift-testing issues.
func expectExpansion(_ source: String, _ expanded: String, diagnostics: [DiagnosticSpec] = [],
                     sourceLocation: SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics,
                         macroSpecs: ["Contract": MacroSpec(type: ContractMacro.self, conformances: ["Contract"])],
                         indentationWidth: .spaces(4),
                         failureHandler: { Issue.record(Comment(rawValue: $0.message), sourceLocation: sourceLocation) })
}

/// An error `@Contract` reports at `line`:`column` of the source.
func error(_ message: String, line: Int, column: Int) -> DiagnosticSpec {
    DiagnosticSpec(message: message, line: line, column: column)
}
