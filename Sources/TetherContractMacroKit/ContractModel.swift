import SwiftDiagnostics
import SwiftSyntax

/// A contract declaration as the macro reads it: names and spelled types only.
struct ContractModel {
    struct Field {
        let name: String
        let type: String
    }

    struct Parameter {
        let label: String
        let type: String
        let isOptional: Bool
    }

    struct Action {
        let name: String
        let parameters: [Parameter]
        /// The label of the trailing `Viewer` parameter, filled in by the server.
        let viewerLabel: String?
        let throwing: Bool

        var argumentsType: String { parameters.isEmpty ? "NoArgs" : "\(name.prefix(1).uppercased())\(name.dropFirst())Args" }
    }

    let name: String
    /// The enum's access modifier with a trailing space ("public "), or "".
    let access: String
    let kind: String
    let state: [Field]
    let views: [Field]
    let actions: [Action]
    let hasActions: Bool
}

extension ContractModel {
    /// Reads `declaration`; nil after reporting every problem found through `diagnose`.
    static func parse(_ node: AttributeSyntax, _ declaration: some DeclGroupSyntax,
                      diagnose: (Diagnostic) -> Void) -> ContractModel? {
        var failed = false
        func error(_ node: any SyntaxProtocol, _ message: ContractDiagnostic) {
            failed = true
            diagnose(Diagnostic(node: Syntax(fromProtocol: node), message: message))
        }
        guard let enumDecl = declaration.as(EnumDeclSyntax.self) else {
            error(node, .notAnEnum)
            return nil
        }
        let kind = kindArgument(node)
        if kind == nil { error(node, .kindNotLiteral) }
        var state: [Field]?
        var views: [Field] = []
        var actions: [Action] = []
        var hasActions = false
        for member in enumDecl.memberBlock.members.map(\.decl) {
            if let cases = member.as(EnumCaseDeclSyntax.self) {
                error(cases, .hasCases)
            } else if let nested = member.as(StructDeclSyntax.self), ["State", "Views"].contains(nested.name.text) {
                let fields = parseFields(nested, error: error)
                if nested.name.text == "State" { state = fields } else { views = fields }
            } else if let proto = member.as(ProtocolDeclSyntax.self), proto.name.text == "Actions" {
                hasActions = true
                actions = parseActions(proto, error: error)
            }
        }
        if state == nil { error(enumDecl.name, .missingState) }
        let stateNames = Set(state?.map(\.name) ?? [])
        for field in views where stateNames.contains(field.name) {
            error(enumDecl.name, .sharedName(field.name))
        }
        guard !failed, let kind, let state else { return nil }
        let access = enumDecl.modifiers.map(\.name.text).first { ["public", "package", "internal"].contains($0) }
        return ContractModel(name: enumDecl.name.text, access: access.map { "\($0) " } ?? "", kind: kind,
                             state: state, views: views, actions: actions, hasActions: hasActions)
    }

    private static func kindArgument(_ node: AttributeSyntax) -> String? {
        guard let argument = node.arguments?.as(LabeledExprListSyntax.self)?.first,
              let literal = argument.expression.as(StringLiteralExprSyntax.self),
              literal.segments.count == 1,
              case .stringSegment(let segment) = literal.segments.first
        else { return nil }
        return segment.content.text
    }

    /// The stored members of `State` or `Views`, in declaration order (the publication order).
    private static func parseFields(_ decl: StructDeclSyntax, error: (any SyntaxProtocol, ContractDiagnostic) -> Void) -> [Field] {
        let owner = decl.name.text
        var fields: [Field] = []
        for member in decl.memberBlock.members.map(\.decl) {
            if let nested = member.as(EnumDeclSyntax.self), nested.name.text == "CodingKeys" {
                error(nested.name, .customCodingKeys)
                continue
            }
            guard let variable = member.as(VariableDeclSyntax.self),
                  !variable.modifiers.contains(where: { $0.name.tokenKind == .keyword(.static) }) else { continue }
            for binding in variable.bindings {
                // Computed properties are not part of the JSON.
                if let accessors = binding.accessorBlock, !isObserverOnly(accessors) { continue }
                guard let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text else { continue }
                if variable.bindingSpecifier.tokenKind == .keyword(.let) {
                    error(binding, .notVar(owner))
                    continue
                }
                guard let type = binding.typeAnnotation?.type else {
                    error(binding, .untyped(owner, name))
                    continue
                }
                let spelled = type.trimmedDescription
                if owner == "State" && binding.initializer == nil && !isOptional(type) {
                    error(binding, .noDefault(name))
                } else if owner == "Views" && !isOptional(type) {
                    error(binding, .viewNotOptional(name))
                }
                fields.append(Field(name: name, type: spelled))
            }
        }
        return fields
    }

    private static func isObserverOnly(_ block: AccessorBlockSyntax) -> Bool {
        guard case .accessors(let list) = block.accessors else { return false }
        return list.allSatisfy { [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }
    }

    static func isOptional(_ type: TypeSyntax) -> Bool {
        if type.is(OptionalTypeSyntax.self) { return true }
        if let named = type.as(IdentifierTypeSyntax.self) { return named.name.text == "Optional" }
        return false
    }

    private static func parseActions(_ proto: ProtocolDeclSyntax, error: (any SyntaxProtocol, ContractDiagnostic) -> Void) -> [Action] {
        var actions: [Action] = []
        for member in proto.memberBlock.members.map(\.decl) {
            guard let function = member.as(FunctionDeclSyntax.self) else {
                error(member, .actionsNotFunctions)
                continue
            }
            if let action = parseAction(function, error: error) { actions.append(action) }
        }
        return actions
    }

    private static func parseAction(_ function: FunctionDeclSyntax, error: (any SyntaxProtocol, ContractDiagnostic) -> Void) -> Action? {
        let name = function.name.text
        func refuse(_ node: some SyntaxProtocol, _ why: String) -> Action? {
            error(node, .unsupportedAction(name, why))
            return nil
        }
        let signature = function.signature
        if ["kind", "actionList", "defaultState", "binding", "stateFields"].contains(name) {
            error(function.name, .reservedName(name))
            return nil
        }
        if function.modifiers.contains(where: { $0.name.tokenKind == .keyword(.static) }) {
            return refuse(function, "is static: actions are instance methods of the ViewModel")
        }
        if function.genericParameterClause != nil { return refuse(function, "is generic: arguments have one JSON type") }
        if signature.effectSpecifiers?.asyncSpecifier != nil { return refuse(function, "is async: actions run synchronously on the room") }
        if let output = signature.returnClause, output.type.trimmedDescription != "Void" {
            return refuse(output, "returns a value: an action's result is the patch it produces")
        }
        let parameters = Array(signature.parameterClause.parameters)
        var arguments: [Parameter] = []
        var viewerLabel: String?
        for (index, parameter) in parameters.enumerated() {
            let label = parameter.firstName.text
            if parameter.firstName.tokenKind == .wildcard { return refuse(parameter, "has an unlabelled parameter: the label is the JSON key") }
            if parameter.ellipsis != nil { return refuse(parameter, "has a variadic parameter: pass an array") }
            if parameter.type.is(AttributedTypeSyntax.self) { return refuse(parameter, "has an inout or attributed parameter") }
            if parameter.type.trimmedDescription == "Viewer" {
                if index != parameters.count - 1 { return refuse(parameter, "takes its Viewer before other parameters: the Viewer comes last") }
                viewerLabel = label
                continue
            }
            arguments.append(Parameter(label: label, type: parameter.type.trimmedDescription, isOptional: isOptional(parameter.type)))
        }
        let throwing = signature.effectSpecifiers?.throwsClause != nil
        return Action(name: name, parameters: arguments, viewerLabel: viewerLabel, throwing: throwing)
    }
}
