import TetherContract

// Import TetherContractMacro (beside TetherContract) to declare contracts with `@Contract`; the
// contract runtime works without it. Only this module costs swift-syntax: TetherContract and
// TetherState do not depend on it, so a package that writes its contracts by hand never builds it.

/// Writes a contract's glue from its one declaration: a caseless enum holding `State`, optionally
/// `Views`, `Presence` and `Failure`, and a `protocol Actions`. It adds the `Contract` conformance,
/// the `Fields` descriptors, one argument struct and `ContractAction` per action, the
/// `Implementation` protocol a ViewModel conforms to and `binding(_:)` for `ActionTable`:
///
/// ```swift
/// import TetherContract
/// import TetherContractMacro
///
/// @Contract("counter")
/// enum CounterContract {
///     struct State: Codable, Sendable, Equatable { var count: Int = 0 }
///     protocol Actions { func increment(by: Int?) throws }
/// }
/// ```
///
/// The expansion names TetherContract's types (`Contract`, `ContractBinding`, …) unqualified, so
/// the file that uses `@Contract` imports TetherContract too.
@attached(member, names: arbitrary)
@attached(extension, conformances: TetherContract.Contract)
public macro Contract(_ kind: String) = #externalMacro(module: "TetherContractMacros", type: "ContractMacro")
