import TetherClient
import TetherJSON
import TetherProtocol
import TetherTUI

/// Any room without a screen of its own (bench, a kind of your own), or any room at all with
/// `tether inspect ROOM`: the state as an indented JSON tree, live, with the rows the last patch
/// touched marked "»"; the room's actions as the server describes them; and a line to send one:
/// `ACTION {json args}`, Enter; with `--history`, who made its last versions.
@MainActor
final class Inspector: Screen {
    let body: Widget
    private let context: ScreenContext
    let actions = ListView([])
    let command = TextField(placeholder: "ACTION {\"arg\": value}, then Enter")
    private let outcome = Label("", style: Style(fg: .green))
    private var described: [KindDescription.Action] = []
    /// `--history`: who made the last versions.
    private var history: HistoryPane?
    /// The actions beside the state from 70 columns of room (an 80-column terminal gives it 78: a
    /// todo's tree and its five actions both whole on 24 rows), else below it while the state keeps 3 lines of JSON.
    private let stateAndActions: Beside
    /// Typing goes to the command line first, whether or not the state arrived before the screen
    /// was drawn (then the tree could take the focus).
    var initialFocus: Widget? { command }

    init(_ context: ScreenContext) {
        self.context = context
        let room = context.room
        let header = Label("")
        let lastPatch = Label("", style: Style(fg: .yellow))
        let tree = ListView([])
        let render = {
            guard let version = room.version else {
                header.text = "waiting for the room's state…"
                return
            }
            header.text = "kind \(Screens.kind(of: room.name)) · version \(version) · epoch \(room.epoch ?? "-")"
            let rows = JSONTree.rows(room.state, changed: room.lastChangedPaths)
            tree.setItems(rows.map(\.line), keys: rows.map(\.key))
        }
        render()
        room.observeChanges { change in
            switch change {
            case .snapshot(let version, let resynced):
                lastPatch.text = resynced ? "snapshot at v\(version) (resynced)" : "snapshot at v\(version)"
            case .patch(let from, let version, let operations):
                let summary = operations.map { "\($0.name) \($0.path)" }.joined(separator: ", ")
                lastPatch.text = "patch v\(from)→v\(version): \(summary)"
            case .predicted:
                lastPatch.text = "predicted: shown before the server's answer"
            }
            render()
        }.store(in: context.bag)
        let treeBox = Box(title: "State", tree)
        let actionsBox = Box(title: "Actions", actions)
        // Not focusable until there are actions to pick: the command line has the focus first.
        actions.isSelectable = false
        actions.items = [Line("asking the server…", style: Style(dim: true))]
        stateAndActions = Beside(treeBox, actionsBox, besideFrom: 70, minimumHeight: 5, secondWidth: 24, secondHeight: 3)
        let main = stateAndActions
        var rows: [Widget] = [header, lastPatch]
        // With --name: the room's members, one line each with what they say about themselves.
        var membersBox: Box?
        let members = ListView([])
        if context.client.options.presence != nil {
            members.isSelectable = false
            membersBox = Box(title: "Here", members)
            rows.append(membersBox!)
        }
        // With --history: the last versions, under the state; they give way before the state.
        var historyBox: Box?
        if context.showsHistory {
            history = HistoryPane(context)
            historyBox = Box(title: "History", history!.list)
        }
        let stack = Stack(.vertical, rows + [main] + (historyBox.map { [$0] } ?? []) + [Box(title: "Send an action", command), outcome])
        // The state keeps 3 lines of JSON: the last patch, then the members give way first.
        stack.setSize(.min(main.minimumHeight), of: main)
        stack.setCollapsible(lastPatch)
        if let historyBox {
            stack.setSize(.length(6), of: historyBox)
            stack.setCollapsible(historyBox)
        }
        if let membersBox {
            stack.setSize(.length(3), of: membersBox)
            stack.setCollapsible(membersBox)
            room.members.bind { [weak members, weak membersBox, weak stack] all in
                let sorted = all.values.sorted { $0.id < $1.id }
                members?.setItems(sorted.map { Line("\($0.id)  \($0.user)  \(String(decoding: $0.data.encoded(), as: UTF8.self))") }, keys: sorted.map(\.id))
                if let membersBox { stack?.setSize(.length(min(max(sorted.count, 1), 3) + 2), of: membersBox) }
            }.store(in: context.bag)
        }
        body = stack

        actions.onSelect { [unowned self] index in self.fillIn(index) }
        command.onSubmit { [unowned self] text in await self.send(text) }
        context.hints.value = ["type ACTION {json} + Enter sends", "Enter on an action fills it in", "↑/↓ scroll", "» marks what the last patch changed"]
        context.run { [unowned self] in await self.loadActions() }
    }

    /// Lists the kind's actions from the server's description (once connected).
    private func loadActions() async {
        do {
            try await context.client.waitUntilConnected()
            guard let kind = try await context.describeKind() else { return }
            described = kind.actions
            stateAndActions.secondWidth = (kind.actions.map(\.signature.displayWidth).max() ?? 20) + 4
            stateAndActions.secondHeight = max(kind.actions.count, 1) + 2
            actions.isSelectable = !kind.actions.isEmpty
            actions.items = kind.actions.isEmpty
                ? [Line("this room has no actions", style: Style(dim: true))]
                : kind.actions.map { Line($0.signature) }
        } catch TetherClientError.server(let error) where error.code == .badMessage {
            actions.items = [Line("this server does not describe its rooms: type the action's name", style: Style(dim: true))]
        } catch {
            actions.items = [Line("no description (\(Output.describe(error))): type the action's name", style: Style(dim: true))]
        }
    }

    /// Puts action `index` with its argument template in the command line.
    private func fillIn(_ index: Int) {
        guard index < described.count else { return }
        let action = described[index]
        command.text = action.arguments.isEmpty ? action.name : "\(action.name) \(action.argumentTemplate)"
        context.application?.focus(command)
    }

    /// Sends `ACTION [JSON-ARGS]` and shows the ack's version.
    func send(_ text: String) async {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return }
        let name = String(trimmed.prefix { !$0.isWhitespace })
        let rest = trimmed.dropFirst(name.count).trimmingCharacters(in: .whitespaces)
        var args: JSON?
        // Whatever happens, the last outcome is no longer the news.
        outcome.text = ""
        if !rest.isEmpty {
            guard let parsed = try? JSONArgs(parsing: rest) else {
                context.onProblem("the arguments must be a JSON object, like {\"by\": 2}")
                return
            }
            args = parsed.value
        }
        // Sent: the line is free for the next command (a text left there had the next appended).
        command.text = ""
        if let version = await context.send(name, args) { outcome.text = "✓ \(name) acknowledged at v\(version)" }
    }
}

/// Pretty-printed JSON, one row per line, marking the rows at or below a changed path. Each row
/// has a key (its path, and "]"/"}" for a closing bracket) so a list showing it keeps its
/// selection on the same row as the state changes.
enum JSONTree {
    static let changedStyle = Style(fg: .yellow, bold: true)

    static func rows(_ json: JSON, changed: [JSONPointer]) -> [(key: String, line: Line)] {
        var out: [(key: String, line: Line)] = []
        append(json, key: nil, path: .root, depth: 0, comma: false, changed: changed, to: &out)
        return out
    }

    static func lines(_ json: JSON, changed: [JSONPointer]) -> [Line] {
        rows(json, changed: changed).map(\.line)
    }

    private static func append(_ json: JSON, key: String?, path: JSONPointer, depth: Int, comma: Bool, changed: [JSONPointer], to out: inout [(key: String, line: Line)]) {
        let isChanged = changed.contains { $0.isPrefix(of: path) }
        func emit(_ text: String, closing: Bool = false) {
            let indent = String(repeating: "  ", count: depth)
            let line = isChanged ? Line([Span("» ", style: changedStyle), Span(indent + text, style: changedStyle)]) : Line("  " + indent + text)
            out.append((key: "\(path)" + (closing ? " end" : ""), line: line))
        }
        let prefix = key.map { JSON.string($0).jsonString + ": " } ?? ""
        let tail = comma ? "," : ""
        switch json {
        case .object(let object) where !object.isEmpty:
            emit(prefix + "{")
            let keys = object.keys.sorted()
            for (i, k) in keys.enumerated() {
                append(object[k]!, key: k, path: path.appending(k), depth: depth + 1, comma: i < keys.count - 1, changed: changed, to: &out)
            }
            emit("}" + tail, closing: true)
        case .array(let array) where !array.isEmpty:
            emit(prefix + "[")
            for (i, element) in array.enumerated() {
                append(element, key: nil, path: path.appending(index: i), depth: depth + 1, comma: i < array.count - 1, changed: changed, to: &out)
            }
            emit("]" + tail, closing: true)
        default:
            emit(prefix + json.jsonString + tail)
        }
    }
}
