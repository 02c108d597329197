import TetherContract
import TetherContractMacro

/// A vote: everyone sees the options and totals, each voter their own choice (`mine`); the
/// ballots (voter → option) and the voters' names appear for all once the vote is closed.
@Contract("vote")
public enum VoteContract {
    public struct State: Codable, Sendable, Equatable {
        public var question: String = "Where do we eat?"
        public var options: [String] = ["pizza", "noodles", "salad"]
        public var totals: [String: Int] = ["pizza": 0, "noodles": 0, "salad": 0]
        public var open: Bool = true
        /// Voter → option: null while the vote is open.
        public var ballots: [String: String]? = nil
        /// Voter → the name they were present with when they voted: null while the vote is open.
        public var voters: [String: String]? = nil
        public init() {}
    }
    public struct Views: Codable, Sendable, Equatable {
        /// What this viewer chose.
        public var mine: String? = nil
        public init() {}
    }
    /// Who a voter is, as the others see them.
    public struct Presence: Codable, Sendable, Equatable {
        public var name: String?
        public init(name: String? = nil) { self.name = name }
    }
    public enum Failure: String, ContractFailure {
        case closed, noSuchOption, anonymous
        public var message: String {
            switch self {
            case .closed: "the vote is closed"
            case .noSuchOption: "no such option"
            case .anonymous: "this vote needs to know who votes"
            }
        }
    }
    public protocol Actions {
        func vote(option: String, viewer: Viewer) throws
        func close()
        func reopen()
    }
}
