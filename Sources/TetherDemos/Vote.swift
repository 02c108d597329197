import TetherBinding
import TetherContract
import TetherDemoContracts
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
public final class Vote: ViewModel, VoteContract.Implementation {
    static let initial = VoteContract.State()

    public let question = Observable(initial.question)
    public let options = Observable(initial.options)
    public let totals = ObservableMap(initial.totals)
    public let open = Observable(initial.open)
    /// Who chose what: null while the vote is open.
    public let ballots = Observable(initial.ballots)
    /// The voters' names, published with the ballots: null while the vote is open.
    public let voters = Observable(initial.voters)
    /// Each voter's choice (stored, never published as such).
    let choices: ObservableMap<String, String>
    /// Each voter's name when they voted, from their presence (stored).
    let names: ObservableMap<String, String>
    private let presence: Presence

    public init(context: ViewModelContext) {
        choices = context.stored.map("choices")
        names = context.stored.map("names")
        presence = context.presence
    }

    public static let actions = ActionTable(VoteContract.binding(Vote.self))

    /// What `viewer` chose, if anything (from the published ballots once the vote is closed).
    public func mine(for viewer: Viewer) -> String? {
        ballots.value?[viewer.id] ?? choices[viewer.id]
    }

    public func vote(option: String, viewer: Viewer) throws {
        guard open.value else { throw VoteContract.Failure.closed }
        guard options.value.contains(option) else {
            throw Refusal(VoteContract.Failure.noSuchOption, "no option \"\(option)\"; the options are \(options.value.joined(separator: ", "))")
        }
        guard !viewer.id.isEmpty else { throw VoteContract.Failure.anonymous }
        let previous = choices[viewer.id]
        guard previous != option else { return }
        if let previous { totals[previous] = max(0, (totals[previous] ?? 0) - 1) }
        totals[option] = (totals[option] ?? 0) + 1
        choices[viewer.id] = option
        if let name = presence.members(ofUser: viewer.id).lazy.compactMap({ $0.data(as: VoteContract.Presence.self)?.name }).first {
            names[viewer.id] = name
        }
    }

    public func close() {
        guard open.value else { return }
        open.value = false
        ballots.value = choices.dictionary
        voters.value = names.dictionary.filter { choices[$0.key] != nil }
    }

    public func reopen() {
        guard !open.value else { return }
        // A vote closed by a version that kept no stored state has its choices only in `ballots`.
        for (voter, option) in ballots.value ?? [:] where choices[voter] == nil { choices[voter] = option }
        for (voter, name) in voters.value ?? [:] where names[voter] == nil { names[voter] = name }
        ballots.value = nil
        voters.value = nil
        open.value = true
    }
}
