import TetherContract
import TetherContractMacro
import TetherJSON

/// `{"fields": {}}`: `set` puts any JSON at `/fields/KEY` as one operation. Load tests use it.
@Contract("bench")
public enum BenchContract {
    public struct State: Codable, Sendable, Equatable {
        public var fields: [String: JSON] = [:]
        public init() {}
    }
    public enum Failure: String, ContractFailure {
        case full
        public var code: RefusalCode { .tooLarge }
        public var message: String { "bench holds at most 10000 fields" }
    }
    public protocol Actions {
        func set(key: String, value: JSON) throws
    }
}
