import TetherJSON
import TetherState

/// A room whose action fails on the server's side, so tests can reach the `internal` error code.
/// Registered only with `tetherd --test-kinds` (with the BenchViews, BenchPresence, Roster and Ledger kinds).
public final class Faulty: ViewModel {
    struct Failure: Error {}

    public init(context: ViewModelContext) {}

    public static let actions = ActionTable<Faulty>()
        .on("fail") { _ in throw Failure() }
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
    ]
}
