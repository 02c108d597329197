import TetherBinding
import TetherJSON
import TetherState

/// A vote: everyone sees the question, the options and the totals; each voter sees their own
/// choice (`mine`, a per-viewer value) and nobody sees anyone else's until the vote is closed,
/// when `ballots` (voter → option) appears for all, with `voters` (voter → the name they were
/// present with when they voted, for those who had one). A voter is their token's `sub`, or,
/// without tokens, who their client's hello says they are (`tether`: one per account and
/// `--name`; a browser: one per browser), else their connection: one vote per voter, and
/// without tokens that is a claim clients make, not a check.
///
/// `{"question": "Where do we eat?", "options": ["pizza", "noodles", "salad"],
///   "totals": {"pizza": 1, "noodles": 0, "salad": 0}, "open": true, "ballots": null, "voters": null}`
/// plus, in the voter's own document, `"mine": "pizza"`.
///
/// The open ballots are the ViewModel's stored state (`context.stored`): never published, but
/// stored with every vote, so a restart, a crash or a cluster's failover during an open vote
/// forgets nobody's choice (a voter who changes their mind still moves one vote).
public final class Vote: ViewModel {
    static let defaultOptions = ["pizza", "noodles", "salad"]

    let question: Observable<String>
    let options: Observable<[String]>
    let totals: ObservableMap<String, Int>
    let open: Observable<Bool>
    /// Who chose what: null while the vote is open.
    let ballots: Observable<[String: String]?>
    /// The voters' names, published with the ballots: null while the vote is open.
    let voters: Observable<[String: String]?>
    /// Each voter's choice (stored, never published as such).
    let choices: ObservableMap<String, String>
    /// Each voter's name when they voted, from their presence (stored).
    let names: ObservableMap<String, String>
    private let presence: Presence

    public init(context: ViewModelContext) {
        question = context.property("question", "Where do we eat?")
        options = context.property("options", Self.defaultOptions)
        totals = context.map("totals", Dictionary(uniqueKeysWithValues: Self.defaultOptions.map { ($0, 0) }))
        open = context.property("open", true)
        ballots = context.property("ballots", nil)
        voters = context.property("voters", nil)
        choices = context.stored.map("choices")
        names = context.stored.map("names")
        presence = context.presence
        context.perViewer("mine") { [unowned self] viewer in self.choice(of: viewer) }
    }

    /// What `viewer` chose, if anything (from the published ballots once the vote is closed).
    func choice(of viewer: Viewer) -> String? {
        ballots.value?[viewer.id] ?? choices[viewer.id]
    }

    struct Choice: Decodable { var option: String }

    public static let actions = ActionTable<Vote>()
        .on("vote", Choice.self) { model, args, viewer in
            guard model.open.value else { throw ActionError.invalidArgs("the vote is closed") }
            guard model.options.value.contains(args.option) else {
                throw ActionError.invalidArgs("no option \"\(args.option)\"; the options are \(model.options.value.joined(separator: ", "))")
            }
            guard !viewer.id.isEmpty else { throw ActionError.invalidArgs("this vote needs to know who votes") }
            let previous = model.choices[viewer.id]
            guard previous != args.option else { return }
            if let previous { model.totals[previous] = max(0, (model.totals[previous] ?? 0) - 1) }
            model.totals[args.option] = (model.totals[args.option] ?? 0) + 1
            model.choices[viewer.id] = args.option
            if let name = model.presence.members(ofUser: viewer.id).lazy.compactMap({ $0.data["name"]?.stringValue }).first {
                model.names[viewer.id] = name
            }
        }
        .on("close") { model in
            guard model.open.value else { return }
            model.open.value = false
            model.ballots.value = model.choices.dictionary
            model.voters.value = model.names.dictionary.filter { model.choices[$0.key] != nil }
        }
        .on("reopen") { model in
            guard !model.open.value else { return }
            // A vote closed by a version that kept no stored state has its choices only in `ballots`.
            for (voter, option) in model.ballots.value ?? [:] where model.choices[voter] == nil { model.choices[voter] = option }
            for (voter, name) in model.voters.value ?? [:] where model.names[voter] == nil { model.names[voter] = name }
            model.ballots.value = nil
            model.voters.value = nil
            model.open.value = true
        }
}
