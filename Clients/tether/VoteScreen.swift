import TetherBinding
import TetherJSON
import TetherTUI

/// `vote` (shared, with a per-viewer value): the question, each option with its total, and
/// "← your vote" beside the option this viewer chose (`/mine`, which only they receive). Keys
/// 1–9 vote, c closes the vote, o reopens it; once closed, everyone's ballots are listed, each
/// voter by the name they joined with (`tether --name`) while they are here.
@MainActor
final class VoteScreen: Screen {
    let body: Widget
    private let context: ScreenContext
    private var options: [String] = []
    private var votes: [String: String]?
    private let ballots = Label("", alignment: .left, wraps: true)

    init(_ context: ScreenContext) {
        self.context = context
        let question = Label("waiting for the vote…", style: Style(bold: true), alignment: .center)
        let table = Label("", alignment: .left)
        let status = Label("", style: Style(dim: true), alignment: .center)
        let close = Button("close the vote").onPress(context.action("close"))
        let reopen = Button("reopen").onPress(context.action("reopen"))
        var rows: [Widget] = [
            Spacer(.vertical), question, Label(), Stack.centeredRow([table]), Label(), status, ballots, Label(),
            Stack.centeredRow([close, reopen]),
        ]
        if let here = context.presenceLabel() { rows += [Label(), here] }
        body = Stack(.vertical, rows + [Spacer(.vertical)])

        context.bind("/question", as: String.self, default: "waiting for the vote…") { question.text = $0 }
        let counts = combineLatest(context.value("/options", as: [String].self, default: []),
                                   context.value("/totals", as: [String: Int].self, default: [:]),
                                   context.value("/mine", as: String.self))
        context.bind(counts) { [weak self] options, totals, mine in
            self?.options = options
            table.text = Self.table(options: options, totals: totals, mine: mine)
        }
        let state = combineLatest(context.value("/open", as: Bool.self), context.value("/ballots", as: [String: String].self))
        context.bind(state) { [weak self] open, votes in
            switch open {
            case true?: status.text = "open: your choice is yours alone until the vote closes"
            case false?: status.text = "closed"
            case nil: status.text = ""
            }
            self?.votes = votes
            self?.showBallots()
        }
        // A voter is their token's subject, or their connection without tokens: the members'
        // `user` says which name that is.
        context.room.members.bind { [weak self] _ in self?.showBallots() }.store(in: context.bag)
        context.hints.value = ["1-9 vote", "c closes", "o reopens"]
    }

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
        var names: [String: String] = [:]
        for member in context.room.members.dictionary.values { names[member.user] = member.displayName }
        ballots.text = votes.map { Self.ballots($0, names: names) } ?? ""
    }

    /// "ballots: ana → pizza, bo → salad", sorted by voter; a voter with a name in `names`
    /// (voter id → name) is shown by it.
    static func ballots(_ votes: [String: String], names: [String: String] = [:]) -> String {
        guard !votes.isEmpty else { return "ballots: none" }
        return "ballots: " + votes.map { (names[$0.key] ?? $0.key, $0.value) }.sorted { $0.0 < $1.0 }
            .map { "\($0.0) → \($0.1)" }.joined(separator: ", ")
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char(let character):
            if let digit = character.wholeNumberValue, digit >= 1, digit <= options.count {
                context.perform("vote", ["option": .string(options[digit - 1])])
            } else if character == "c" {
                context.perform("close")
            } else if character == "o" {
                context.perform("reopen")
            } else {
                return false
            }
        default: return false
        }
        return true
    }
}
