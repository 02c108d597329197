import TetherState

/// `bench` that keeps presence (`bench` opts out), to measure presence churn under load
/// (`tether-load --kind bench-presence --presence --churn N`, against `tetherd --test-kinds`).
public final class BenchPresence: ViewModel {
    let bench: Bench

    public init(context: ViewModelContext) {
        bench = Bench(context: context)
    }

    public static let actions = ActionTable<BenchPresence>()
        .on("set", Bench.Set.self) { model, args in try Bench.set(args, in: model.bench) }
}
