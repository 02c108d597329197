import TetherBinding
import TetherContract
import TetherJSON
import TetherState

/// A contract written by hand, as the contract macro would write it (mechanism B): the tests'
/// ViewModel `Score` implements it.
enum ScoreContract: Contract {
    struct State: Codable, Sendable, Equatable {
        var count = 0
        var doubled = 0
        var label: String? = nil
        var history: [Int] = []
        var totals: [String: Int] = [:]
    }
    struct Views: Codable, Sendable, Equatable {
        var mine: Int? = nil
    }
    struct StepArgs: Codable, Sendable, Equatable { var by: Int? = nil }
    struct LabelArgs: Codable, Sendable, Equatable { var label: String }

    enum Failure: String, ContractFailure {
        case overflow, tooLong, full
        var code: RefusalCode { self == .full ? .tooLarge : .invalidArgs }
        var message: String {
            switch self {
            case .overflow: "count would overflow"
            case .tooLong: "the label is too long"
            case .full: "the history holds at most 3 entries"
            }
        }
    }

    static let kind = "score"
    enum Fields {
        static let count = StateField<State, Int>("count", \.count)
        static let doubled = StateField<State, Int>("doubled", \.doubled)
        static let label = StateField<State, String?>("label", \.label)
        static let history = StateField<State, [Int]>("history", \.history)
        static let totals = StateField<State, [String: Int]>("totals", \.totals)
        static let mine = StateField<Views, Int?>("mine", \.mine)
    }
    static let increment = ContractAction<ScoreContract, StepArgs>("increment")
    static let setLabel = ContractAction<ScoreContract, LabelArgs>("setLabel")
    static let reset = ContractAction<ScoreContract, NoArgs>("reset")
    static var actionList: [AnyContractAction] { [.init(increment), .init(setLabel), .init(reset)] }

    /// What a ViewModel implements: one published member per State field, one function per
    /// Views field, one method per action. The compiler checks names and types.
    protocol Implementation: AnyObject, SendableMetatype {
        associatedtype CountPublisher: StatePublisher<Int>
        associatedtype DoubledPublisher: StatePublisher<Int>
        associatedtype LabelPublisher: StatePublisher<String?>
        associatedtype HistoryPublisher: StatePublisher<[Int]>
        associatedtype TotalsPublisher: StatePublisher<[String: Int]>
        var count: CountPublisher { get }
        var doubled: DoubledPublisher { get }
        var label: LabelPublisher { get }
        var history: HistoryPublisher { get }
        var totals: TotalsPublisher { get }
        func mine(for viewer: Viewer) -> Int?
        func increment(by: Int?, viewer: Viewer) throws
        func setLabel(label: String) throws
        func reset()
    }

    static func binding<M: Implementation>(_: M.Type) -> ContractBinding<M> {
        ContractBinding(
            ScoreContract.self,
            publish: { model, target in
                target.publish(Fields.count, model.count)
                target.publish(Fields.doubled, model.doubled)
                target.publish(Fields.label, model.label)
                target.publish(Fields.history, model.history)
                target.publish(Fields.totals, model.totals)
            },
            views: [ContractView(Fields.mine) { model, viewer in model.mine(for: viewer) }],
            actions: [
                ContractHandler(increment) { model, args, viewer in try model.increment(by: args.by, viewer: viewer) },
                ContractHandler(setLabel) { model, args in try model.setLabel(label: args.label) },
                ContractHandler(reset) { model, _ in model.reset() },
            ])
    }
}

/// The tests' ViewModel: no string names, everything through `ScoreContract`.
final class Score: ViewModel, ScoreContract.Implementation {
    let count = Observable(ScoreContract.State().count)
    let doubled: ReadOnlyObservable<Int>
    let label = Observable<String?>(nil)
    let history = ObservableList<Int>()
    let totals = ObservableMap<String, Int>()

    init(context: ViewModelContext) {
        doubled = count.map { $0 &* 2 }
    }

    static let actions = ActionTable(ScoreContract.binding(Score.self))

    func mine(for viewer: Viewer) -> Int? { totals[viewer.id] }

    func increment(by: Int?, viewer: Viewer) throws {
        let step = by ?? 1
        let (sum, overflow) = count.value.addingReportingOverflow(step)
        guard !overflow else { throw ScoreContract.Failure.overflow }
        guard history.count < 3 else { throw ScoreContract.Failure.full }
        count.value = sum
        history.append(step)
        if !viewer.id.isEmpty { totals[viewer.id] = (totals[viewer.id] ?? 0) + step }
    }

    func setLabel(label: String) throws {
        // A bug of the ViewModel's own (the tests ask for it): not the client's fault.
        if label == "bug" { _ = try JSONValueDecoder().decode(Int.self, from: "x") }
        guard label.count <= 8 else { throw Refusal(ScoreContract.Failure.tooLong, "the label \"\(label)\" is longer than 8 characters") }
        self.label.value = label
    }

    func reset() { count.value = 0 }
}
