import TetherContract
import TetherDemoContracts

// `CounterContract` as other builds of a client might have it, written by hand (the macro's
// output, without it): each differs from the demo server's in one way the tests name.

/// Fewer actions than the server: compatible.
enum SmallerCounter: Contract {
    struct State: Codable, Sendable, Equatable { var count = 0 }
    static let kind = "counter"
    static let increment = ContractAction<SmallerCounter, CounterContract.IncrementArgs>("increment")
    static var actionList: [AnyContractAction] { [.init(increment)] }
    static var defaultState: State? { State() }
}

/// A State member, a Views member and an action the server does not have.
enum ExtendedCounter: Contract {
    struct State: Codable, Sendable, Equatable {
        var count = 0
        var label: String? = nil
    }
    struct Views: Codable, Sendable, Equatable { var mine: Int? = nil }
    enum Failure: String, ContractFailure {
        case overflow
        var message: String { "count would overflow" }
    }
    static let kind = "counter"
    static let increment = ContractAction<ExtendedCounter, CounterContract.IncrementArgs>("increment")
    static let decrement = ContractAction<ExtendedCounter, NoArgs>("decrement")
    static let reset = ContractAction<ExtendedCounter, NoArgs>("reset")
    static let double = ContractAction<ExtendedCounter, NoArgs>("double")
    static var actionList: [AnyContractAction] { [.init(increment), .init(decrement), .init(reset), .init(double)] }
    static var defaultState: State? { State() }
}

/// `count` (and `increment`'s `by`) a string.
enum RetypedCounter: Contract {
    struct State: Codable, Sendable, Equatable { var count = "" }
    struct IncrementArgs: Codable, Sendable, Equatable { var by: String? }
    static let kind = "counter"
    static let increment = ContractAction<RetypedCounter, IncrementArgs>("increment")
    static var actionList: [AnyContractAction] { [.init(increment)] }
    static var defaultState: State? { State() }
}

/// `increment` without arguments.
enum BareCounter: Contract {
    struct State: Codable, Sendable, Equatable { var count = 0 }
    static let kind = "counter"
    static let increment = ContractAction<BareCounter, NoArgs>("increment")
    static var actionList: [AnyContractAction] { [.init(increment)] }
    static var defaultState: State? { State() }
}

/// `increment` whose `by` is required.
enum StrictCounter: Contract {
    struct State: Codable, Sendable, Equatable { var count = 0 }
    struct IncrementArgs: Codable, Sendable, Equatable { var by: Int }
    static let kind = "counter"
    static let increment = ContractAction<StrictCounter, IncrementArgs>("increment")
    static var actionList: [AnyContractAction] { [.init(increment)] }
    static var defaultState: State? { State() }
}

/// Typed presence data where the server takes any object.
enum NamedCounter: Contract {
    struct State: Codable, Sendable, Equatable { var count = 0 }
    struct Presence: Codable, Sendable, Equatable { var name: String }
    static let kind = "counter"
    static let increment = ContractAction<NamedCounter, CounterContract.IncrementArgs>("increment")
    static let decrement = ContractAction<NamedCounter, NoArgs>("decrement")
    static let reset = ContractAction<NamedCounter, NoArgs>("reset")
    static var actionList: [AnyContractAction] { [.init(increment), .init(decrement), .init(reset)] }
    static var defaultState: State? { State() }
}
