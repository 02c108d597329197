import ArgumentParser
import TetherClient
import TetherJSON
import TetherProtocol

/// `tether kinds` and `tether describe KIND`: what the server's rooms are and do, from the
/// protocol's `describe` request.
@MainActor
enum Discovery {
    static func kinds(options: ClientOptions, timeout: Duration, json: Bool) async throws {
        let kinds = try await ask(kind: nil, options: options, timeout: timeout, json: json)
        guard !json else { return }
        let nameWidth = max(4, kinds.map(\.name.count).max() ?? 0)
        let scopeWidth = max(5, kinds.map(\.scope.count).max() ?? 0)
        for kind in kinds {
            let actions = kind.actions.isEmpty ? "(no actions)" : kind.actions.map(\.name).joined(separator: ", ")
            Output.writeLine(Array((pad(kind.name, nameWidth) + "  " + pad(kind.scope, scopeWidth) + "  " + actions).utf8))
        }
    }

    static func describe(kind room: String, options: ClientOptions, timeout: Duration, json: Bool) async throws {
        let kind = Screens.kind(of: room)
        let kinds = try await ask(kind: kind, options: options, timeout: timeout, json: json)
        guard !json else { return }
        guard let description = kinds.first(where: { $0.name == kind }) ?? kinds.first else {
            throw Output.failure("the server described no kind \"\(kind)\"", code: Output.serverError)
        }
        for line in text(of: description) { Output.writeLine(Array(line.utf8)) }
    }

    /// Every kind the server describes (`tether codegen`).
    static func allKinds(options: ClientOptions, timeout: Duration) async throws -> [KindDescription] {
        try await ask(kind: nil, options: options, timeout: timeout, json: false)
    }

    /// "todo (shared)", then one line per action: its name and each argument with its type.
    static func text(of kind: KindDescription) -> [String] {
        var lines = ["\(kind.name) (\(kind.scope))"]
        if kind.actions.isEmpty { lines.append("  no actions") }
        let width = kind.actions.map(\.name.count).max() ?? 0
        for action in kind.actions {
            let arguments = action.arguments.isEmpty
                ? "(no arguments)"
                : action.arguments.map { "\($0.name): \($0.shape.typeName)\($0.isOptional ? " (optional)" : "")" }.joined(separator: ", ")
            lines.append("  " + pad(action.name, width) + "  " + arguments)
        }
        return lines
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// Sends `describe`; with `json`, prints the reply frame as received.
    private static func ask(kind: String?, options: ClientOptions, timeout: Duration, json: Bool) async throws -> [KindDescription] {
        let client = try await OneShot.connectedClient(options: options, timeout: timeout, label: "tether.describe")
        var reply: [UInt8]?
        let keep: ([UInt8]) -> Void = { raw in
            if let frame = try? JSONParser().parse(raw), frame["type"] == "description" || frame["type"] == "error" { reply = raw }
        }
        client.onMessage = { _, raw in keep(raw) }
        client.onUndecodable = { _, raw in keep(raw) }
        do {
            let kinds = try await client.describe(kind: kind)
            if json, let reply { Output.writeLine(reply) }
            await client.close()
            return kinds
        } catch TetherClientError.server(let error) {
            if json, let reply { Output.writeLine(reply) }
            await client.close()
            if error.code == .badMessage {
                throw Output.failure("this server does not answer `describe` (\(Output.describe(error))); it is older than this client", code: Output.serverError)
            }
            throw Output.failure(Output.describe(error), code: Output.serverError)
        } catch {
            await client.close()
            throw Output.failure(Output.describe(error))
        }
    }
}
