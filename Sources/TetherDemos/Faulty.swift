import TetherBinding
import TetherJSON
import TetherState

/// A room whose actions fail on the server's side, so tests can reach the `internal` error code
/// and see a failed turn taken back (`changeThenFail` changes `/changes`, then throws).
/// Registered only with `tetherd --test-kinds` (with the BenchViews, BenchPresence, Roster, Ledger and Dice kinds).
public final class Faulty: ViewModel {
    struct Failure: Error {}

    let changes: Observable<Int>

    public init(context: ViewModelContext) {
        changes = context.property("changes", 0)
    }

    public static let actions = ActionTable<Faulty>()
        .on("fail") { _ in throw Failure() }
        .on("changeThenFail") { model in
            model.changes.value += 1
            throw Failure()
        }
}

extension Demos {
    /// Kinds that exist only for tests of the daemon itself.
    public static let testKinds: [ViewModelKind] = [
        ViewModelKind("faulty", scope: .shared, Faulty.self),
        // Per-viewer values under load: 10 distinct views per turn, or one per subscriber.
        ViewModelKind("bench-views10", scope: .shared, BenchViews.self) { BenchViews(context: $0, groups: 10) },
        ViewModelKind("bench-viewers", scope: .shared, BenchViews.self) { BenchViews(context: $0, groups: nil) },
        // Presence churn under load.
        ViewModelKind("bench-presence", scope: .shared, BenchPresence.self),
        // A ViewModel that follows presence.
        ViewModelKind("roster", scope: .shared, Roster.self),
        // Attributable actions for the fault-injection test (Tests/Jepsen).
        ViewModelKind("ledger", scope: .shared, Ledger.self),
        // Chance and time read through the context: exports replay exactly.
        ViewModelKind("dice", scope: .shared, Dice.self).keepingArgumentsInHistory(),
    ]
}
