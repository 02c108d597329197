import TetherBinding
import TetherClient
import TetherDemoContracts
import TetherTUI

/// `vote` (shared, with a per-viewer value): the question, each option with its total, and
/// "← your vote" beside the option this viewer chose (`mine`, which only they receive). Keys
/// 1–N vote (N options), c closes the vote, o reopens it; once closed, everyone's ballots are
/// listed, each voter by the name they voted with (`tether --name`).
@MainActor
final class VoteScreen: Screen {
    let body: Widget
    private let context: ScreenContext
    private let vote: ContractRoom<VoteContract>
    private var options: [String] = []
    private var votes: [String: String]?
    /// The names the room published with the ballots (voter → name).
    private var voterNames: [String: String] = [:]
    private let ballots = Label("", alignment: .left, wraps: true)

    init(_ context: ScreenContext) {
        self.context = context
        let vote = context.room(VoteContract.self)
        self.vote = vote
        let question = Label("waiting for the vote…", style: Style(bold: true), alignment: .center)
        let table = Label("", alignment: .left)
        // Wraps at 40 columns ("secret until…" was cut there).
        let status = Label("", style: Style(dim: true), alignment: .center, wraps: true)
        let close = Button("close the vote").onPress(context.action(vote.close))
        let reopen = Button("reopen").onPress(context.action(vote.reopen))
        let gaps = [Label(), Label(), Label(), Label()]
        var rows: [Widget] = [
            Spacer(.vertical), question, gaps[0], Stack.centeredRow([table]), gaps[1], status, ballots, gaps[2],
            Stack.centeredRow([close, reopen]),
        ]
        if let here = context.presenceLabel() { rows += [gaps[3], here] }
        let stack = Stack(.vertical, rows + [Spacer(.vertical)])
        // On a short terminal the blank lines go first ("here: …" was the one lost at 40×12).
        for gap in gaps { stack.setCollapsible(gap) }
        body = stack

        context.bind(Field.question, default: "waiting for the vote…") { question.text = $0 }
        let counts = combineLatest(context.value(Field.options, default: []), context.value(Field.totals, default: [:]), context.value(Field.mine))
        context.bind(counts) { [weak self] options, totals, mine in
            self?.options = options
            table.text = Self.table(options: options, totals: totals, mine: mine)
        }
        let state = combineLatest(context.value(Field.open), context.value(Field.ballots))
        context.bind(state) { [weak self] open, votes in
            switch open {
            case true?: status.text = "open: one vote per person, secret until the vote closes"
            case false?: status.text = "closed"
            case nil: status.text = ""
            }
            self?.votes = votes
            self?.showBallots()
        }
        context.bind(context.value(Field.voters)) { [weak self] names in
            self?.voterNames = names ?? [:]
            self?.showBallots()
        }
        // Who is here now names voters the room did not (they voted without a name).
        context.bind(vote.members) { [weak self] _ in self?.showBallots() }
        context.bind(Field.options, default: []) { options in
            context.hints.value = [options.count > 1 ? "1-\(min(options.count, 9)) vote" : "1 votes", "c closes", "o reopens"]
        }
    }

    private typealias Field = VoteContract.Fields

    /// One line per option: its number, name, a bar and the total, and "← your vote" on mine.
    static func table(options: [String], totals: [String: Int], mine: String?) -> String {
        let width = options.map(\.count).max() ?? 0
        return options.enumerated().map { index, option in
            let total = totals[option] ?? 0
            let name = option.padding(toLength: width, withPad: " ", startingAt: 0)
            let bar = String(repeating: "█", count: min(total, 20))
            return "\(index + 1)  \(name)  \(bar)\(bar.isEmpty ? "" : " ")\(total)\(option == mine ? "  ← your vote" : "")"
        }.joined(separator: "\n")
    }

    private func showBallots() {
        var names = voterNames
        for member in vote.members.value where names[member.user] == nil { names[member.user] = member.data?.name ?? member.user }
        ballots.text = votes.map { Self.ballots($0, names: names) } ?? ""
    }

    /// "ballots: ana → pizza, bo → salad", sorted by voter; a voter with a name in `names`
    /// (voter id → name) is shown by it, one without as "someone (first 6 characters of the id)".
    static func ballots(_ votes: [String: String], names: [String: String] = [:]) -> String {
        guard !votes.isEmpty else { return "ballots: none" }
        return "ballots: " + votes.map { (names[$0.key] ?? "someone (\($0.key.prefix(6)))", $0.value) }.sorted { $0.0 < $1.0 }
            .map { "\($0.0) → \($0.1)" }.joined(separator: ", ")
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char(let character):
            if let digit = character.wholeNumberValue, digit >= 1, digit <= options.count {
                context.perform(vote.vote, .init(option: options[digit - 1]))
            } else if character == "c" {
                context.perform(vote.close)
            } else if character == "o" {
                context.perform(vote.reopen)
            } else {
                return false
            }
        default: return false
        }
        return true
    }
}
