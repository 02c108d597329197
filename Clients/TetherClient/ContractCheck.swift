import TetherContract
import TetherProtocol

/// How the server's contract for a room's kind compares with the client's, checked when the
/// connection comes up (and again after each reconnect, maybe to another node): the
/// fingerprints `describe` and `ContractSchema` give, and when they differ, the schemas
/// themselves (`ContractComparison`).
public enum ContractCheck: Hashable, Sendable, CustomStringConvertible {
    /// Not checked yet (or the connection dropped since: it is checked again on reconnecting).
    case pending
    /// The same fingerprint: the same contract.
    case matches
    /// Another contract, but the client's still fits: the server only added (`additions`).
    case compatible(ContractComparison)
    /// The client relies on something the server does not have as it has it (`conflicts`).
    case incompatible(ContractComparison)
    /// Not compared: the server's kind has no contract schema, or `describe` failed (why).
    case unchecked(String)

    public var description: String {
        switch self {
        case .pending: "not checked yet"
        case .matches: "the server's contract matches"
        case .compatible(let comparison):
            "compatible; the server also has " + (comparison.additions.isEmpty ? "nothing more" : comparison.additions.joined(separator: ", "))
        case .incompatible(let comparison): "incompatible: " + comparison.conflicts.joined(separator: "; ")
        case .unchecked(let reason): "unchecked: \(reason)"
        }
    }

    /// The verdict on a kind the server describes as `description`, for a client of `schema`.
    static func verdict(client schema: ContractSchema, server description: KindDescription) -> ContractCheck {
        guard let serverSchema = description.schema else { return .unchecked("the server's kind \(description.name) has no contract schema") }
        if description.fingerprint == schema.fingerprint { return .matches }
        let comparison = ContractComparison(client: schema.document, server: serverSchema)
        return comparison.isCompatible ? .compatible(comparison) : .incompatible(comparison)
    }
}

extension ContractRoom {
    /// Checks on each new connection; forgets the verdict when the connection drops.
    func connectionChanged(_ state: ConnectionState) {
        guard state.isConnected != wasConnected else { return }
        wasConnected = state.isConnected
        checkGeneration += 1
        if state.isConnected {
            checkContract()
        } else {
            checkStorage.value = .pending
        }
    }

    /// Asks `describe` for the kind and records the verdict, unless a reconnect overtook it.
    private func checkContract() {
        let generation = checkGeneration
        let kind = self.kind
        Task { @MainActor [weak self] in
            guard let client = self?.remote.client else { return }
            let verdict: ContractCheck
            do {
                let described = try await client.describe(kind: kind).first { $0.name == kind }
                guard let self else { return }
                verdict = described.map { ContractCheck.verdict(client: self.schema, server: $0) } ?? .unchecked("the server did not describe \(kind)")
            } catch {
                verdict = .unchecked("describe \(kind) failed: \(error)")
            }
            guard let self, self.checkGeneration == generation else { return }
            self.record(verdict)
        }
    }

    private func record(_ verdict: ContractCheck) {
        checkStorage.value = verdict
        let logger = remote.client?.logger
        switch verdict {
        case .incompatible(let comparison):
            logger?.warning("room \(remote.name): \(C.self) does not fit the server's contract: \(comparison.conflicts.joined(separator: "; "))")
        case .compatible, .unchecked:
            logger?.debug("room \(remote.name): \(C.self): \(verdict)")
        case .matches, .pending:
            break
        }
    }
}
