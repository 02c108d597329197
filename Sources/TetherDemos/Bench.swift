import TetherBinding
import TetherJSON
import TetherState

/// `{"fields": {}}`: `set` puts any JSON at `/fields/KEY` as one operation. Load tests use it.
public final class Bench: ViewModel {
    static let maximumFields = 10_000

    let fields: ObservableMap<String, JSON>

    public init(context: ViewModelContext) {
        fields = context.map("fields", [String: JSON]())
    }

    struct Set: Decodable { var key: String; var value: JSON }

    /// Load tests put thousands of clients in one room: no presence stream to fan out per join.
    public static let hasPresence = false

    public static let actions = ActionTable<Bench>()
        .on("set", Set.self) { model, args in try set(args, in: model) }

    /// The `set` action (BenchViews does the same).
    static func set(_ args: Set, in model: Bench) throws {
        guard model.fields[args.key] != nil || model.fields.count < maximumFields else {
            throw ActionError.tooLarge("bench holds at most \(maximumFields) fields")
        }
        model.fields[args.key] = args.value
    }
}
