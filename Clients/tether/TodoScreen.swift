import Foundation
import TetherBinding
import TetherClient
import TetherDemoContracts
import TetherJSON
import TetherTUI

/// `todo` (shared): the list with toggles; an input that adds, or renames the item chosen with
/// `e`; delete and clear-completed. The selection follows its item (by id) whatever other clients
/// do to the list. The hints follow the focus, and letters typed outside the input go into it
/// (a new to-do), so typing never acts on the list unseen.
@MainActor
final class TodoScreen: Screen {
    typealias Item = TodoContract.Item

    let body: Widget
    private let context: ScreenContext
    private let todo: ContractRoom<TodoContract>
    private let items: ObservableList<Item>
    let list = ListView([])
    let input = TextField(placeholder: "a new to-do, then Enter")
    private let inputBox: Box
    /// The item being renamed, while the input renames instead of adding.
    private(set) var renaming: Item?

    init(_ context: ScreenContext) {
        self.context = context
        todo = context.room(TodoContract.self)
        items = context.list(TodoContract.Fields.items)
        inputBox = Box(title: "Add", input)
        let summary = Label("", style: Style(dim: true))
        // Where the row does not fit (40 columns: its last button read "[ Cle…"), compact buttons.
        let buttons = [
            [Button("Toggle"), Button("Rename"), Button("Delete"), Button("Clear completed")],
            [Button("Toggle"), Button("Rename"), Button("Delete"), Button("Clear done")],
        ]
        for row in buttons { for button in row { button.isCompact = row[3].title == "Clear done" } }

        let editors = Editors()
        self.editors = editors
        context.bindList(items, to: list, key: \.id) { item in Self.line(item, editor: editors.byItem[item.id]) }
        items.bind { items in
            summary.text = items.isEmpty ? "nothing to do" : "\(items.filter(\.done).count) of \(items.count) done"
        }.store(in: context.bag)

        let listBox = Box(title: "To-dos", list)
        listBox.footer = { [unowned list] in list.positionText }  // where the view is in a long list
        // Not Stack.row: its trailing spacer has no length, so the row would always seem to fit.
        let buttonRow = Fallback(Stack(.horizontal, spacing: 1, buttons[0]), otherwise: Stack.row(buttons[1], spacing: 1))
        var rows: [Widget] = [inputBox, listBox, buttonRow, summary]
        let here = context.presenceLabel()
        if let here {
            here.alignment = .left
            rows.append(here)
        }
        let stack = Stack(.vertical, rows)
        stack.setSize(.fill(), of: listBox)
        body = stack
        items.bind { [unowned self] items in
            if let item = renaming, !items.contains(where: { $0.id == item.id }) { renamedItemWasDeleted(item) }
        }.store(in: context.bag)
        input.onSubmit { [unowned self] text in await self.submit(text) }
        list.onSelect { [unowned self] _ in await self.toggleSelected() }
        for row in buttons {
            row[0].onPress { [unowned self] in await self.toggleSelected() }
            row[1].onPress { [unowned self] in self.startRenaming() }
            row[2].onPress { [unowned self] in await self.removeSelected() }
            row[3].onPress(context.action(todo.clearCompleted))
        }
        focusDidChange(to: input)
        if here != nil { markOthersEditing() }
    }

    var initialFocus: Widget? { input }

    func focusDidChange(to widget: Widget?) {
        context.hints.value = if widget === input {
            renaming == nil ? ["type + Enter adds"] : ["Enter renames", "Esc cancels"]
        } else if widget === list {
            ["Space toggles", "e renames", "Delete removes", "other letters start a new to-do"]
        } else {
            ["Enter presses the button", "e renames", "Delete removes"]
        }
    }

    /// Another member's `editing` marks its item; the list redraws when that changes.
    private func markOthersEditing() {
        context.room.members.bind { [unowned self] members in
            var editors: [String: String] = [:]
            for member in members.values.sorted(by: { $0.id < $1.id }) where member.id != context.client.session {
                if let item = member.data["editing"]?.stringValue, editors[item] == nil { editors[item] = member.displayName }
            }
            guard editors != self.editors.byItem else { return }
            self.editors.byItem = editors
            list.setItems(items.map { Self.line($0, editor: editors[$0.id]) }, keys: items.map(\.id))
        }.store(in: context.bag)
    }

    /// Who else is renaming which item (item id → name), from the room's presence.
    private let editors: Editors

    private final class Editors {
        var byItem: [String: String] = [:]
    }

    static func line(_ item: Item, editor: String? = nil) -> Line {
        var spans = [Span(item.done ? "[x] " : "[ ] ", style: Style(fg: item.done ? .green : nil)), Span(item.title, style: Style(dim: item.done))]
        if let editor { spans.append(Span("  (\(editor) is editing)", style: Style(fg: .yellow))) }
        return Line(spans)
    }

    /// The selected item, found by its id (the list's key), never by its row number.
    private var selected: Item? {
        guard let id = list.selectedKey else { return nil }
        return items.first { $0.id == id }
    }

    private func toggleSelected() async {
        guard let item = selected else { return }
        await context.send(todo.toggle, .init(id: item.id), predict: Self.changing(item.id) { $0.done.toggle() })
    }

    private func removeSelected() async {
        guard let item = selected else { return }
        await context.send(todo.remove, .init(id: item.id))
    }

    /// A prediction that changes the item `id` with `change`, wherever it is now.
    static func changing(_ id: String, _ change: @escaping (inout Item) -> Void) -> (inout TodoContract.State) -> Void {
        { state in
            guard let index = state.items.firstIndex(where: { $0.id == id }) else { return }
            change(&state.items[index])
        }
    }

    /// Puts the selected item's title in the input, which renames it on Enter (Esc cancels).
    func startRenaming() {
        guard let item = selected else { return }
        renaming = item
        context.announce(["editing": .string(item.id)])
        inputBox.title = "Rename \"\(item.title)\" (Esc cancels)"
        input.text = item.title
        context.application?.focus(input)
        focusDidChange(to: input)
    }

    /// Back to adding; the input keeps `text`.
    private func stopRenaming(keeping text: String = "") {
        if renaming != nil { context.announce() }
        renaming = nil
        inputBox.title = "Add"
        input.text = text
        focusDidChange(to: context.application?.focused)
    }

    /// Another member deleted the item being renamed: what was typed stays, to add as a new one.
    /// (Who deleted it is not known: the protocol does not say who made a change.)
    private func renamedItemWasDeleted(_ item: Item) {
        stopRenaming(keeping: input.text)
        context.onProblem("\(item.title) was deleted while you were renaming it; Enter adds your text as a new to-do")
    }

    private func submit(_ text: String) async {
        let title = text.trimmingCharacters(in: .whitespaces)
        guard !title.isEmpty else { return }
        if let item = renaming {
            stopRenaming()
            context.application?.focus(list)  // back where the rename started
            // Deleted by someone else after Enter, before the rename arrived: say so in words.
            let retitle = Self.changing(item.id) { $0.title = title }
            await context.send(todo.rename, .init(id: item.id, title: title), predict: retitle) { [unowned self] _ in
                items.contains { $0.id == item.id } ? nil : "\(item.title) was deleted while you were renaming it"
            }
            return
        }
        // Cleared at once, so typing the next one can start before the ack; given back on failure.
        input.text = ""
        if await context.send(todo.add, .init(title: title)) == nil, input.text.isEmpty { input.text = text }
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char(" "): context.run { [unowned self] in await self.toggleSelected() }
        case .delete: context.run { [unowned self] in await self.removeSelected() }
        case .char("e"): startRenaming()
        case .escape where renaming != nil: stopRenaming()
        case .char(let c) where c != "q" && !c.isWhitespace:
            // Typing outside the input starts a new to-do (q still quits, as the hints say).
            context.application?.focus(input)
            _ = input.handle(key)
        default: return false
        }
        return true
    }
}
