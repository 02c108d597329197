import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherJSON
import TetherState

/// `BenchContract`'s ViewModel: `set` puts any JSON at `/fields/KEY` as one operation.
public final class Bench: ViewModel, BenchContract.Implementation {
    static let maximumFields = 10_000

    public let fields = ObservableMap<String, JSON>()

    public init(context: ViewModelContext) {}

    /// Load tests put thousands of clients in one room: no presence stream to fan out per join.
    public static let hasPresence = false

    public static let actions = ActionTable(BenchContract.binding(Bench.self))

    public func set(key: String, value: JSON) throws {
        guard Self.put(value, at: key, in: fields) else { throw BenchContract.Failure.full }
    }

    /// `set` on `fields` (the test kinds built on bench do the same); false when it is full.
    static func put(_ value: JSON, at key: String, in fields: ObservableMap<String, JSON>) -> Bool {
        guard fields[key] != nil || fields.count < maximumFields else { return false }
        fields[key] = value
        return true
    }
}
