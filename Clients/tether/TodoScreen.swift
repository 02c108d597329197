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

        context.bindList(items, to: list, key: \.id, line: Self.line)
        items.bind { items in
            summary.text = items.isEmpty ? "nothing to do" : "\(items.filter(\.done).count) of \(items.count) done"
        }.store(in: context.bag)

        let listBox = Box(title: "To-dos", list)
        let stack = Stack(.vertical, [inputBox, listBox, Stack.row([toggle, rename, delete, clear], spacing: 1), summary])
        stack.setSize(.fill(), of: listBox)
        body = stack
        input.onSubmit { [unowned self] text in await self.submit(text) }
        list.onSelect { [unowned self] _ in await self.act(on: "toggle") }
        toggle.onPress { [unowned self] in await self.act(on: "toggle") }
        delete.onPress { [unowned self] in await self.act(on: "remove") }
        rename.onPress { [unowned self] in self.startRenaming() }
        context.hints.value = ["type + Enter adds", "Space toggles", "e renames", "Delete removes"]
    }

    static func line(_ item: Item) -> Line {
        Line([Span(item.done ? "[x] " : "[ ] ", style: Style(fg: item.done ? .green : nil)), Span(item.title, style: Style(dim: item.done))])
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
        inputBox.title = "Rename \"\(item.title)\" (Esc cancels)"
        input.text = item.title
        context.application?.focus(input)
    }

    private func stopRenaming() {
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
        if await !context.send("add", ["title": .string(title)]), input.text.isEmpty { input.text = text }
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
