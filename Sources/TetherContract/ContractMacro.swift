/// Writes a contract's glue from its one declaration: a caseless enum holding `State`, optionally
/// `Views`, `Presence` and `Failure`, and a `protocol Actions`. It adds the `Contract` conformance,
/// the `Fields` descriptors, one argument struct and `ContractAction` per action, the
/// `Implementation` protocol a ViewModel conforms to and `binding(_:)` for `ActionTable`:
///
/// ```swift
/// @Contract("counter")
/// enum CounterContract {
///     struct State: Codable, Sendable, Equatable { var count: Int = 0 }
///     protocol Actions { func increment(by: Int?) throws }
/// }
/// ```
@attached(member, names: arbitrary)
@attached(extension, conformances: Contract)
public macro Contract(_ kind: String) = #externalMacro(module: "TetherContractMacros", type: "ContractMacro")
