import TetherBinding
import TetherState

/// Publishes who is here (each member's `data.name`, else its user) and who edits what, from
/// presence only: the state follows the members (`context.presence`). Registered only with
/// `tetherd --test-kinds`, as `roster`: tests of presence reaching a ViewModel, on one node and
/// on a cluster.
public final class Roster: ViewModel {
    let here: Observable<[String]>
    let editing: ObservableMap<String, String>
    private let bag = CancellableBag()

    public init(context: ViewModelContext) {
        here = context.property("here", [String]())
        editing = context.map("editing", [String: String]())
        context.presence.members.bind { [unowned self] members in
            here.value = members.values.map { $0.data["name"]?.stringValue ?? $0.user }.sorted()
            let claimed = Dictionary(members.values.compactMap { member in
                member.data["editing"]?.stringValue.map { ($0, member.data["name"]?.stringValue ?? member.user) }
            }, uniquingKeysWith: { first, _ in first })
            for item in Array(editing.keys) where claimed[item] == nil { editing.removeValue(forKey: item) }
            for (item, name) in claimed where editing[item] != name { editing[item] = name }
        }.store(in: bag)
    }

    public static let actions = ActionTable<Roster>()
}
