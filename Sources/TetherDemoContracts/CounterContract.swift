import TetherContract
import TetherContractMacro

/// `{"count": 0}`: the smallest shared room.
@Contract("counter")
public enum CounterContract {
    public struct State: Codable, Sendable, Equatable {
        public var count: Int = 0
        public init() {}
    }
    public enum Failure: String, ContractFailure {
        case overflow
        public var message: String { "count would overflow" }
    }
    public protocol Actions {
        /// Adds `by` (default 1).
        func increment(by: Int?) throws
        func decrement() throws
        func reset()
    }
}
