import TetherContract
import TetherContractMacro

/// The exchange calculator: `result` follows the typed `amount`; `error` says why it can't.
@Contract("exchange")
public enum ExchangeContract {
    public struct State: Codable, Sendable, Equatable {
        public var amount: String = ""
        public var from: String = "USD"
        public var to: String = "KRW"
        /// Units of `to` per unit of `from`.
        public var rate: Double = 1350
        public var currencies: [String] = ["USD", "KRW", "EUR", "JPY", "GBP"]
        /// amount × rate with two decimals; empty while there is nothing to convert.
        public var result: String = ""
        public var error: String? = nil
        public init() {}
    }
    public enum Failure: String, ContractFailure {
        case amountTooLong, badRate, unknownCurrency, samePair
        public var message: String {
            switch self {
            case .amountTooLong: "amount is longer than 64 characters"
            case .badRate: "rate must be a positive number"
            case .unknownCurrency: "currencies are USD, KRW, EUR, JPY, GBP"
            case .samePair: "from and to must be two different currencies"
            }
        }
    }
    public protocol Actions {
        func setAmount(value: String) throws
        func setRate(value: Double) throws
        func setPair(from: String, to: String) throws
    }
}
