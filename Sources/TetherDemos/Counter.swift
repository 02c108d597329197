import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherState

/// `CounterContract`'s ViewModel.
public final class Counter: ViewModel, CounterContract.Implementation {
    public let count = Observable(CounterContract.State().count)

    public init(context: ViewModelContext) {}

    public static let actions = ActionTable(CounterContract.binding(Counter.self))

    public func increment(by: Int?) throws {
        let (sum, overflow) = count.value.addingReportingOverflow(by ?? 1)
        guard !overflow else { throw CounterContract.Failure.overflow }
        count.value = sum
    }

    public func decrement() throws {
        guard count.value > Int.min else { throw CounterContract.Failure.overflow }
        count.value -= 1
    }

    public func reset() { count.value = 0 }
}
