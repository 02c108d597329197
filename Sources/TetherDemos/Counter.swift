import TetherBinding
import TetherJSON
import TetherState

/// `{"count": 0}`: the smallest shared room.
public final class Counter: ViewModel {
    public let count: Observable<Int>

    public init(context: ViewModelContext) {
        count = context.property("count", 0)
    }

    struct Step: Decodable { var by: Int? }

    public static let actions = ActionTable<Counter>()
        .on("increment", Step.self) { model, args in
            let (sum, overflow) = model.count.value.addingReportingOverflow(args.by ?? 1)
            guard !overflow else { throw ActionError.invalidArgs("count would overflow") }
            model.count.value = sum
        }
        .on("decrement") { model in
            guard model.count.value > Int.min else { throw ActionError.invalidArgs("count would overflow") }
            model.count.value -= 1
        }
        .on("reset") { model in model.count.value = 0 }
}
