import TetherJSON

/// A ViewModel's contract: its published state, per-viewer values, presence data, actions and
/// typed errors, declared once in Swift and shared by the server and its clients. This is the
/// runtime a contract macro would write against; it can also be written by hand:
///
/// ```swift
/// enum CounterContract: Contract {
///     struct State: Codable, Sendable, Equatable { var count = 0 }
///     struct IncrementArgs: Codable, Sendable, Equatable { var by: Int? }
///     static let kind = "counter"
///     static let count = StateField<State, Int>("count", \.count)
///     static let increment = ContractAction<CounterContract, IncrementArgs>("increment")
///     static var actionList: [AnyContractAction] { [.init(increment)] }
/// }
/// ```
///
/// `describe` carries its JSON Schema and fingerprint (`ContractSchema`).
public protocol Contract: SendableMetatype {
    /// The published document: one stored property per top-level member.
    associatedtype State: Codable & Sendable & Equatable
    /// The per-viewer values (`ViewModelContext.perViewer`): every member Optional, absent when nil.
    associatedtype Views: Codable & Sendable & Equatable = NoViews
    /// The data clients join with.
    associatedtype Presence: Codable & Sendable & Equatable = AnyPresence
    /// The typed errors its actions throw.
    associatedtype Failure: ContractFailure = NoFailure
    /// The kind name rooms of this contract usually have ("counter").
    static var kind: String { get }
    /// Every action, with its argument type.
    static var actionList: [AnyContractAction] { get }
    /// The state a client shows before the first snapshot: written into the schema as `default`
    /// annotations (not part of the fingerprint). Nil: no defaults.
    static var defaultState: State? { get }
}

extension Contract {
    public static var defaultState: State? { nil }
}

/// The `Views` of a contract with no per-viewer values.
public struct NoViews: Codable, Sendable, Equatable {
    public init() {}
}

/// The `Presence` of a contract that does not declare its presence data: any JSON object.
public struct AnyPresence: Codable, Sendable, Equatable, JSONSchemaDescribing {
    public var data: JSON
    public init(_ data: JSON = .object([:])) { self.data = data }
    public init(from decoder: any Decoder) throws { data = try JSON(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try data.encode(to: encoder) }
    public static var jsonSchema: JSON { ["type": "object"] }
}

/// How a refused action is reported: the `code` of the client's `error`.
public enum RefusalCode: String, Sendable, Hashable {
    case invalidArgs = "invalid_args"
    case tooLarge = "too_large"
}

/// A contract's typed errors: the case name (`rawValue`) is stable; `message` is for people.
public protocol ContractFailure: Error, Sendable, RawRepresentable, CaseIterable where RawValue == String {
    /// `.invalidArgs` unless the case says otherwise.
    var code: RefusalCode { get }
    var message: String { get }
}

extension ContractFailure {
    public var code: RefusalCode { .invalidArgs }
}

/// A failure whose message carries details (`no option "x"; the options are …`): the case stays
/// the stable part, the message is free text.
public struct Refusal: Error, Sendable {
    public let reason: String
    public let code: RefusalCode
    public let message: String

    public init<F: ContractFailure>(_ failure: F, _ message: String) {
        reason = failure.rawValue
        code = failure.code
        self.message = message
    }
}

/// The `Failure` of a contract whose actions have no typed errors.
public enum NoFailure: ContractFailure {
    public init?(rawValue: String) { nil }
    public var rawValue: String { switch self {} }
    public static var allCases: [NoFailure] { [] }
    public var message: String { switch self {} }
}
