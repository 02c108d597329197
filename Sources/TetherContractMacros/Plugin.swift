import SwiftCompilerPlugin
import SwiftSyntax
import SwiftSyntaxMacros
import TetherContractMacroKit

@main
struct TetherContractMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [ContractMacro.self]
}

/// The compiler finds a macro by module and type name (`TetherContractMacros.ContractMacro`):
/// this one forwards to the implementation in TetherContractMacroKit, which the tests link.
public struct ContractMacro: MemberMacro, ExtensionMacro {
    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        try TetherContractMacroKit.ContractMacro.expansion(of: node, providingMembersOf: declaration, conformingTo: protocols, in: context)
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax] {
        try TetherContractMacroKit.ContractMacro.expansion(of: node, attachedTo: declaration, providingExtensionsOf: type,
                                                            conformingTo: protocols, in: context)
    }
}
