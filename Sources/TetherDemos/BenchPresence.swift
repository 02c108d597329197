import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherJSON
import TetherState

/// `bench` that keeps presence (`bench` opts out), to measure presence churn under load
/// (`tether-load --kind bench-presence --presence --churn N`, against `tetherd --test-kinds`).
public final class BenchPresence: ViewModel, BenchContract.Implementation {
    public let fields = ObservableMap<String, JSON>()

    public init(context: ViewModelContext) {}

    public static let actions = ActionTable(BenchContract.binding(BenchPresence.self))

    public func set(key: String, value: JSON) throws {
        guard Bench.put(value, at: key, in: fields) else { throw BenchContract.Failure.full }
    }
}
