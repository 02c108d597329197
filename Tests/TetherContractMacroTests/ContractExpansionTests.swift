import Testing

/// What `@Contract` writes: the same glue as the hand-written `ScoreContract` in TetherStateTests.
@Suite("@Contract's expansion")
struct ContractExpansionTests {
    @Test func aCounter() {
        expectExpansion("""
            @Contract("counter")
            public enum CounterContract {
                public struct State: Codable, Sendable, Equatable {
                    public var count: Int = 0
                }
                public protocol Actions {
                    /// Adds `by` (default 1).
                    func increment(by: Int?) throws
                    func reset()
                }
            }
            """, """
            public enum CounterContract {
                public struct State: Codable, Sendable, Equatable {
                    public var count: Int = 0
                }
                public protocol Actions {
                    /// Adds `by` (default 1).
                    func increment(by: Int?) throws
                    func reset()
                }

                public static let kind = "counter"

                public enum Fields {
                    public static let count = StateField<State, Int>("count", \\.count)
                }

                public struct IncrementArgs: Codable, Sendable, Equatable {
                    public var by: Int?
                    public init(by: Int? = nil) {
                        self.by = by
                    }
                }

                public static let increment = ContractAction<CounterContract, IncrementArgs>("increment")

                public static let reset = ContractAction<CounterContract, NoArgs>("reset")

                public static var actionList: [AnyContractAction] {
                    [.init(increment), .init(reset)]
                }

                public static var defaultState: State? {
                    State()
                }

                /// What a ViewModel implements: one published member per State field, one function per
                /// Views field, one method per action. The compiler checks names and types.
                public protocol Implementation: AnyObject, SendableMetatype, Actions {
                    associatedtype CountPublisher: StatePublisher<Int>
                    var count: CountPublisher {
                        get
                    }
                }

                public static func binding<M: Implementation>(_: M.Type) -> ContractBinding<M> {
                    ContractBinding(
                        CounterContract.self,
                        publish: { model, target in
                            target.publish(Fields.count, model.count)
                        },
                        views: [],
                        actions: [
                            ContractHandler(increment) { model, args in
                                try model.increment(by: args.by)
                            },
                            ContractHandler(reset) { model, _ in
                                model.reset()
                            },
                        ])
                }
            }

            extension CounterContract: Contract {
            }
            """)
    }

    @Test func viewsPresenceAndFailure() {
        expectExpansion("""
            @Contract("vote")
            enum VoteContract {
                struct State: Codable, Sendable, Equatable {
                    var options: [String] = ["pizza", "salad"]
                    var totals: [String: Int] = [:]
                    var open: Bool = true
                    /// Voter → option: null while the vote is open.
                    var ballots: [String: String]?
                    var summary: String { "\\(totals.count) options" }
                }
                struct Views: Codable, Sendable, Equatable {
                    var mine: String? = nil
                }
                typealias Presence = NamedPresence
                enum Failure: String, ContractFailure {
                    case closed
                    var message: String { "the vote is closed" }
                }
                protocol Actions {
                    func vote(option: String, viewer: Viewer) throws
                    func close(viewer: Viewer)
                }
            }
            """, """
            enum VoteContract {
                struct State: Codable, Sendable, Equatable {
                    var options: [String] = ["pizza", "salad"]
                    var totals: [String: Int] = [:]
                    var open: Bool = true
                    /// Voter → option: null while the vote is open.
                    var ballots: [String: String]?
                    var summary: String { "\\(totals.count) options" }
                }
                struct Views: Codable, Sendable, Equatable {
                    var mine: String? = nil
                }
                typealias Presence = NamedPresence
                enum Failure: String, ContractFailure {
                    case closed
                    var message: String { "the vote is closed" }
                }
                protocol Actions {
                    func vote(option: String, viewer: Viewer) throws
                    func close(viewer: Viewer)
                }

                static let kind = "vote"

                enum Fields {
                    static let options = StateField<State, [String]>("options", \\.options)
                    static let totals = StateField<State, [String: Int]>("totals", \\.totals)
                    static let open = StateField<State, Bool>("open", \\.open)
                    static let ballots = StateField<State, [String: String]?>("ballots", \\.ballots)
                    static let mine = StateField<Views, String?>("mine", \\.mine)
                }

                struct VoteArgs: Codable, Sendable, Equatable {
                    var option: String
                    init(option: String) {
                        self.option = option
                    }
                }

                static let vote = ContractAction<VoteContract, VoteArgs>("vote")

                static let close = ContractAction<VoteContract, NoArgs>("close")

                static var actionList: [AnyContractAction] {
                    [.init(vote), .init(close)]
                }

                static var defaultState: State? {
                    State()
                }

                /// What a ViewModel implements: one published member per State field, one function per
                /// Views field, one method per action. The compiler checks names and types.
                protocol Implementation: AnyObject, SendableMetatype, Actions {
                    associatedtype OptionsPublisher: StatePublisher<[String]>
                    associatedtype TotalsPublisher: StatePublisher<[String: Int]>
                    associatedtype OpenPublisher: StatePublisher<Bool>
                    associatedtype BallotsPublisher: StatePublisher<[String: String]?>
                    var options: OptionsPublisher {
                        get
                    }
                    var totals: TotalsPublisher {
                        get
                    }
                    var open: OpenPublisher {
                        get
                    }
                    var ballots: BallotsPublisher {
                        get
                    }
                    func mine(for viewer: Viewer) -> String?
                }

                static func binding<M: Implementation>(_: M.Type) -> ContractBinding<M> {
                    ContractBinding(
                        VoteContract.self,
                        publish: { model, target in
                            target.publish(Fields.options, model.options)
                            target.publish(Fields.totals, model.totals)
                            target.publish(Fields.open, model.open)
                            target.publish(Fields.ballots, model.ballots)
                        },
                        views: [ContractView(Fields.mine) { model, viewer in
                                model.mine(for: viewer)
                            }],
                        actions: [
                            ContractHandler(vote) { model, args, viewer in
                                try model.vote(option: args.option, viewer: viewer)
                            },
                            ContractHandler(close) { model, _, viewer in
                                model.close(viewer: viewer)
                            },
                        ])
                }
            }

            extension VoteContract: Contract {
            }
            """)
    }
}
