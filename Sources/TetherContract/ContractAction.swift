import TetherJSON

/// A member of a contract's `State` (or `Views`): its JSON name and where it is in the struct.
public struct StateField<Root, Value: Codable & Sendable>: Sendable {
    public let name: String
    public let keyPath: KeyPath<Root, Value> & Sendable

    public init(_ name: String, _ keyPath: KeyPath<Root, Value> & Sendable) {
        self.name = name
        self.keyPath = keyPath
    }
}

/// An action of contract `C` whose `args` object is `Args` (`NoArgs` when it takes none).
public struct ContractAction<C: Contract, Args: Codable & Sendable>: Sendable {
    public let name: String

    public init(_ name: String) { self.name = name }
}

/// An action with its types erased, as `Contract.actionList` lists them.
public struct AnyContractAction: Sendable {
    public let name: String
    public let argumentsType: any (Codable & Sendable).Type

    public init<C: Contract, Args>(_ action: ContractAction<C, Args>) {
        name = action.name
        argumentsType = Args.self
    }
}

/// The arguments of an action that takes none: `args` absent or `{}`.
public struct NoArgs: Codable, Sendable, Equatable {
    public init() {}
}

/// An `args` object that does not fit its action: the message names what is wrong.
public struct InvalidArguments: Error, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// Decoding of action arguments, shared by every contract's dispatch.
public enum ContractArgs {
    /// `json` as `Args`, strictly: a member `Args` does not read is refused, naming it, so a
    /// misspelt argument is reported rather than ignored. Throws `InvalidArguments` only (a
    /// `DecodingError` from the ViewModel's own code stays the server's fault).
    public static func decode<Args: Decodable>(_ type: Args.Type, from json: JSON, action: String) throws -> Args {
        if let none = NoArgs() as? Args {
            if case .object(let members) = json, let field = members.keys.min() {
                throw InvalidArguments("unknown field args.\(field) (\(action) takes no arguments)")
            }
            return none
        }
        var decoder = JSONValueDecoder()
        decoder.rootPath = ["args"]
        decoder.rejectsUnknownKeys = true
        do {
            return try decoder.decode(Args.self, from: json)
        } catch let error as DecodingError {
            throw InvalidArguments(error.readableDescription)
        }
    }
}
