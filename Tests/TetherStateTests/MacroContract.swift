import TetherBinding
import TetherContract
import TetherContractMacro
import TetherJSON
import TetherState

/// `ScoreContract` declared once and written by `@Contract`: the tests run a ViewModel of it
/// exactly as they run `Score`, to show the expansion compiles and behaves like the hand-written one.
@Contract("tally")
enum TallyContract {
    struct State: Codable, Sendable, Equatable {
        var count: Int = 0
        var doubled: Int = 0
        var label: String? = nil
        var history: [Int] = []
        var totals: [String: Int] = [:]
    }
    struct Views: Codable, Sendable, Equatable {
        var mine: Int? = nil
    }
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
    protocol Actions {
        func increment(by: Int?, viewer: Viewer) throws
        func setLabel(label: String) throws
        func reset()
    }
}

/// `Score` again, against the generated `Implementation`.
final class Tally: ViewModel, TallyContract.Implementation {
    let count = Observable(TallyContract.State().count)
    let doubled: ReadOnlyObservable<Int>
    let label = Observable<String?>(nil)
    let history = ObservableList<Int>()
    let totals = ObservableMap<String, Int>()

    init(context: ViewModelContext) {
        doubled = count.map { $0 &* 2 }
    }

    static let actions = ActionTable(TallyContract.binding(Tally.self))

    func mine(for viewer: Viewer) -> Int? { totals[viewer.id] }

    func increment(by: Int?, viewer: Viewer) throws {
        let step = by ?? 1
        let (sum, overflow) = count.value.addingReportingOverflow(step)
        guard !overflow else { throw TallyContract.Failure.overflow }
        guard history.count < 3 else { throw TallyContract.Failure.full }
        count.value = sum
        history.append(step)
        if !viewer.id.isEmpty { totals[viewer.id] = (totals[viewer.id] ?? 0) + step }
    }

    func setLabel(label: String) throws {
        guard label.count <= 8 else { throw Refusal(TallyContract.Failure.tooLong, "the label \"\(label)\" is longer than 8 characters") }
        self.label.value = label
    }

    func reset() { count.value = 0 }
}

/// A public contract: the expansion's access levels compile (a public ViewModel may conform),
/// and its own Presence and Failure are the contract's.
@Contract("ping")
public enum PingContract {
    public struct State: Codable, Sendable, Equatable {
        public var pings: Int = 0
    }
    public struct Presence: Codable, Sendable, Equatable {
        public var name: String?
    }
    public enum Failure: String, ContractFailure {
        case tooMany
        public var message: String { "at most 10 pings at once" }
    }
    public protocol Actions {
        func ping(times: Int?) throws
    }
}

public final class Ping: ViewModel, PingContract.Implementation {
    public let pings = Observable(0)
    public init(context: ViewModelContext) {}
    public static let actions = ActionTable(PingContract.binding(Ping.self))
    public func ping(times: Int?) throws {
        guard (times ?? 1) <= 10 else { throw PingContract.Failure.tooMany }
        pings.value += times ?? 1
    }
}
