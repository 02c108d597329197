import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Contract("kind")`: writes, from a contract's one declaration, what a contract written by
/// hand holds (Tests/TetherStateTests/ScoreContract.swift): the descriptors, the argument
/// structs, the `Implementation` protocol a ViewModel conforms to and its `binding(_:)`.
public struct ContractMacro: MemberMacro, ExtensionMacro {
    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        guard let model = ContractModel.parse(node, declaration, diagnose: { context.diagnose($0) }) else { return [] }
        return ContractGenerator(model).members()
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax] {
        // The member role reports the problems; a contract with any gets no conformance either,
        // so the compiler does not add its own errors to the macro's.
        guard ContractModel.parse(node, declaration, diagnose: { _ in }) != nil, !protocols.isEmpty else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): Contract {}")]
    }
}

/// The generated members, as source text.
struct ContractGenerator {
    let model: ContractModel
    let access: String

    init(_ model: ContractModel) {
        self.model = model
        access = model.access
    }

    func members() -> [DeclSyntax] {
        var decls: [String] = ["\(access)static let kind = \(literal(model.kind))"]
        decls.append(fields())
        decls += model.actions.filter { !$0.parameters.isEmpty }.map(argumentsStruct)
        decls += model.actions.map { action in
            "\(access)static let \(action.name) = ContractAction<\(model.name), \(action.argumentsType)>(\(literal(action.name)))"
        }
        let list = model.actions.map { ".init(\($0.name))" }.joined(separator: ", ")
        decls.append("\(access)static var actionList: [AnyContractAction] { [\(list)] }")
        decls.append("\(access)static var defaultState: State? { State() }")
        decls.append(implementation())
        decls.append(binding())
        return decls.map { DeclSyntax(stringLiteral: $0) }
    }

    /// Names are identifiers, and the kind is the source text of a one-segment literal: both
    /// are already valid inside quotes.
    private func literal(_ text: String) -> String { "\"\(text)\"" }

    private func capitalized(_ name: String) -> String { name.prefix(1).uppercased() + name.dropFirst() }

    private func fields() -> String {
        let lines = model.state.map { ("State", $0) } + model.views.map { ("Views", $0) }
        let body = lines.map { root, field in
            "    \(access)static let \(field.name) = StateField<\(root), \(field.type)>(\(literal(field.name)), \\.\(field.name))"
        }
        return "\(access)enum Fields {\n\(body.joined(separator: "\n"))\n}"
    }

    private func argumentsStruct(_ action: ContractModel.Action) -> String {
        let stored = action.parameters.map { "    \(access)var \($0.label): \($0.type)" }
        let parameters = action.parameters.map { "\($0.label): \($0.type)\($0.isOptional ? " = nil" : "")" }
        let assignments = action.parameters.map { "        self.\($0.label) = \($0.label)" }
        return """
            \(access)struct \(action.argumentsType): Codable, Sendable, Equatable {
            \(stored.joined(separator: "\n"))
                \(access)init(\(parameters.joined(separator: ", "))) {
            \(assignments.joined(separator: "\n"))
                }
            }
            """
    }

    /// One published member per State field, one function per Views field, the actions.
    private func implementation() -> String {
        let inherited = model.hasActions ? "AnyObject, SendableMetatype, Actions" : "AnyObject, SendableMetatype"
        var lines = model.state.map { "    associatedtype \(capitalized($0.name))Publisher: StatePublisher<\($0.type)>" }
        lines += model.state.map { "    var \($0.name): \(capitalized($0.name))Publisher { get }" }
        lines += model.views.map { "    func \($0.name)(for viewer: Viewer) -> \($0.type)" }
        return """
            /// What a ViewModel implements: one published member per State field, one function per
            /// Views field, one method per action. The compiler checks names and types.
            \(access)protocol Implementation: \(inherited) {
            \(lines.joined(separator: "\n"))
            }
            """
    }

    private func binding() -> String {
        let publish = model.state.map { "            target.publish(Fields.\($0.name), model.\($0.name))" }
        let views = model.views.map { "ContractView(Fields.\($0.name)) { model, viewer in model.\($0.name)(for: viewer) }" }
        let actions = model.actions.map(handler)
        let publishClosure = publish.isEmpty ? "{ _, _ in }" : "{ model, target in\n\(publish.joined(separator: "\n"))\n        }"
        return """
            \(access)static func binding<M: Implementation>(_: M.Type) -> ContractBinding<M> {
                ContractBinding(
                    \(model.name).self,
                    publish: \(publishClosure),
                    views: [\(views.joined(separator: ", "))],
                    actions: [\(actions.map { "\n            \($0)," }.joined())
                    ])
            }
            """
    }

    private func handler(_ action: ContractModel.Action) -> String {
        var arguments = action.parameters.map { "\($0.label): args.\($0.label)" }
        if let viewer = action.viewerLabel { arguments.append("\(viewer): viewer") }
        let argsName = action.parameters.isEmpty ? "_" : "args"
        let names = action.viewerLabel == nil ? "model, \(argsName)" : "model, \(argsName), viewer"
        let call = "\(action.throwing ? "try " : "")model.\(action.name)(\(arguments.joined(separator: ", ")))"
        return "ContractHandler(\(action.name)) { \(names) in \(call) }"
    }
}
