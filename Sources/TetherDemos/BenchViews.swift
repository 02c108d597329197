import TetherBinding
import TetherDemoContracts
import TetherJSON
import TetherState

/// `bench` with a per-viewer value that changes on every turn, to measure what per-viewer
/// values cost the server per delivery (`tether-load --kind bench-views10` or `bench-viewers`,
/// against `tetherd --test-kinds`). Each viewer's document is `{"fields": {...}, "view":
/// {"group": G, "turn": N}}`: with `groups` 10, viewers fall into 10 groups (10 distinct frames
/// per turn); with nil, each viewer is a group of their own (one frame per subscriber).
public final class BenchViews: ViewModel {
    let fields: ObservableMap<String, JSON>
    /// Turns so far: every viewer's value changes with it.
    private(set) var turns = 0

    public required convenience init(context: ViewModelContext) {
        self.init(context: context, groups: 10)
    }

    init(context: ViewModelContext, groups: Int?) {
        fields = context.map("fields", [String: JSON]())
        context.perViewer("view") { [unowned self] viewer in
            ["group": .string(groups.map { String(Self.stableHash(viewer.id) % UInt64($0)) } ?? viewer.id), "turn": .int(self.turns)] as JSON
        }
    }

    /// FNV-1a: the same group for a viewer in every process (Swift's `hashValue` is seeded).
    static func stableHash(_ text: String) -> UInt64 {
        text.utf8.reduce(14_695_981_039_346_656_037) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
    }

    /// The runtime API underneath contracts, on purpose: a per-viewer value no contract declares.
    public static let actions = ActionTable<BenchViews>()
        .on("set", BenchContract.SetArgs.self) { model, args in
            guard Bench.put(args.value, at: args.key, in: model.fields) else { throw ActionError.tooLarge(BenchContract.Failure.full.message) }
            model.turns += 1
        }
}
