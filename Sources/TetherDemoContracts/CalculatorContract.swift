import TetherContract
import TetherContractMacro

/// The calculator: keys edit the display; `=` evaluates it exactly and adds "EXPR = RESULT"
/// to the history. A malformed expression or a division by zero shows `Error: why`.
@Contract("calculator")
public enum CalculatorContract {
    public struct State: Codable, Sendable, Equatable {
        public var display: String = ""
        /// "EXPR = RESULT", the oldest first (at most 100).
        public var history: [String] = []
        public init() {}
    }
    public enum Failure: String, ContractFailure {
        case unknownKey
        public var message: String { "unknown key; keys are 0-9 + - * / % . back clear =" }
    }
    public protocol Actions {
        /// One of `CalculatorContract.keys`.
        func press(key: String) throws
    }
    /// The keys `press` takes.
    public static let keys: [String] = (0...9).map(String.init) + ["+", "-", "*", "/", "%", ".", "back", "clear", "="]
}
