import Foundation
import TetherBinding
import TetherJSON
import TetherTUI

/// `todo` (shared): the list with toggles; an input that adds, or renames the item chosen with
/// `e`; delete and clear-completed. The selection follows its item (by id) whatever other clients
/// do to the list.
@MainActor
final class TodoScreen: Screen {
    struct Item: Decodable, Equatable {
        var id: String
        var title: String
        var done: Bool
    }

    let body: Widget
    private let context: ScreenContext
    private let items: ObservableList<Item>
    let list = ListView([])
    let input = TextField(placeholder: "a new to-do, then Enter")
    private let inputBox: Box
    /// The id of the item being renamed, while the input renames instead of adding.
    private(set) var renaming: String?

    init(_ context: ScreenContext) {
        self.context = context
        items = context.room.list("/items", of: Item.self)
        inputBox = Box(title: "Add", input)
        let summary = Label("", style: Style(dim: true))
        let toggle = Button("Toggle")
        let rename = Button("Rename")
        let delete = Button("Delete")
        let clear = Button("Clear completed").onPress(context.action("clearCompleted"))

        let editors = Editors()
        self.editors = editors
        context.bindList(items, to: list, key: \.id) { item in Self.line(item, editor: editors.byItem[item.id]) }
        items.bind { items in
            summary.text = items.isEmpty ? "nothing to do" : "\(items.filter(\.done).count) of \(items.count) done"
        }.store(in: context.bag)

        let listBox = Box(title: "To-dos", list)
        var rows: [Widget] = [inputBox, listBox, Stack.row([toggle, rename, delete, clear], spacing: 1), summary]
        let here = context.presenceLabel()
        if let here {
            here.alignment = .left
            rows.append(here)
        }
        let stack = Stack(.vertical, rows)
        stack.setSize(.fill(), of: listBox)
        body = stack
        input.onSubmit { [unowned self] text in await self.submit(text) }
        list.onSelect { [unowned self] _ in await self.act(on: "toggle") }
        toggle.onPress { [unowned self] in await self.act(on: "toggle") }
        delete.onPress { [unowned self] in await self.act(on: "remove") }
        rename.onPress { [unowned self] in self.startRenaming() }
        context.hints.value = ["type + Enter adds", "Space toggles", "e renames", "Delete removes"]
        if here != nil { markOthersEditing() }
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

    /// Sends `action` with the selected item's id.
    private func act(on action: String) async {
        guard let item = selected else { return }
        await context.send(action, ["id": .string(item.id)])
    }

    /// Puts the selected item's title in the input, which renames it on Enter (Esc cancels).
    func startRenaming() {
        guard let item = selected else { return }
        renaming = item.id
        context.announce(["editing": .string(item.id)])
        inputBox.title = "Rename \"\(item.title)\" (Esc cancels)"
        input.text = item.title
        context.application?.focus(input)
    }

    private func stopRenaming() {
        if renaming != nil { context.announce() }
        renaming = nil
        inputBox.title = "Add"
        input.text = ""
    }

    private func submit(_ text: String) async {
        let title = text.trimmingCharacters(in: .whitespaces)
        guard !title.isEmpty else { return }
        if let id = renaming {
            stopRenaming()
            context.application?.focus(list)  // back where the rename started
            await context.send("rename", ["id": .string(id), "title": .string(title)])
            return
        }
        // Cleared at once, so typing the next one can start before the ack; given back on failure.
        input.text = ""
        if await context.send("add", ["title": .string(title)]) == nil, input.text.isEmpty { input.text = text }
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char(" "): context.run { [unowned self] in await self.act(on: "toggle") }
        case .delete: context.run { [unowned self] in await self.act(on: "remove") }
        case .char("e"): startRenaming()
        case .escape where renaming != nil: stopRenaming()
        default: return false
        }
        return true
    }
}
