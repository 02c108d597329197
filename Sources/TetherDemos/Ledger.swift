import TetherBinding
import TetherState

/// `{"count": 0, "recent": []}`: every `add` names itself, so a checker that reads the patch
/// stream knows which action each version applied. The fault-injection test (Tests/Jepsen) uses
/// it; registered only with `tetherd --test-kinds`.
///
/// Each `add` is one turn of exactly these operations, in this order: `replace /count`, then
/// `add /recent/N` with its id (the list keeps the last `keep` ids: `remove /recent/0` follows
/// once it is full). A version step therefore carries exactly one id.
///
/// Each `add` also adds to `applied`, stored state (never published); `audit` publishes it as
/// `audited`. After any faults it must equal `count`: the stored state went through every
/// restart and failover with the published one.
public final class Ledger: ViewModel {
    static let keep = 32

    let count: Observable<Int>
    let recent: ObservableList<String>
    let audited: Observable<Int?>
    let applied: Observable<Int>

    public init(context: ViewModelContext) {
        count = context.property("count", 0)
        recent = context.list("recent", [String]())
        audited = context.property("audited", nil)
        applied = context.stored.property("applied", 0)
    }

    struct Add: Decodable { var id: String; var by: Int }

    public static let hasPresence = false

    public static let actions = ActionTable<Ledger>()
        .on("add", Add.self) { model, args in
            guard !args.id.isEmpty, args.id.utf8.count <= 64 else { throw ActionError.invalidArgs("id must have 1 to 64 bytes") }
            let (sum, overflow) = model.count.value.addingReportingOverflow(args.by)
            guard !overflow else { throw ActionError.invalidArgs("count would overflow") }
            model.count.value = sum
            model.recent.append(args.id)
            if model.recent.count > keep { _ = model.recent.remove(at: 0) }
            model.applied.value &+= args.by
        }
        .on("audit") { model in model.audited.value = model.applied.value }
}
