import Foundation
import TetherBinding
import TetherJSON
import TetherTUI

/// `todo` (shared): the list, item by item, with toggles; an input that adds; delete and
/// clear-completed.
@MainActor
final class TodoScreen: Screen {
    struct Item: Decodable, Equatable {
        var id: String
        var title: String
        var done: Bool
    }

    let body: Widget
    let hints = "Enter/space toggles · Delete removes · type + Enter adds"
    private let context: ScreenContext
    private let items: ObservableList<Item>
    private let list = ListView([])

    init(_ context: ScreenContext) {
        self.context = context
        items = context.room.list("/items", of: Item.self)
        let input = TextField(placeholder: "a new to-do, then Enter")
        let summary = Label("", style: Style(dim: true))
        let toggle = Button("Toggle")
        let delete = Button("Delete")
        let clear = Button("Clear completed").onPress(context.action("clearCompleted"))

        // Item-level: an insert, remove or replace in the room changes one row.
        list.items = items.map(Self.line)
        items.observeChanges { [list] change in
            switch change {
            case .insert(let index, let item):
                list.items.insert(Self.line(item), at: index)
                if let selected = list.selectedIndex, index <= selected, list.items.count > 1 { list.selectedIndex = selected + 1 }
            case .remove(let index, _):
                list.items.remove(at: index)
            case .replace(let index, _, let item):
                list.items[index] = Self.line(item)
            }
        }.store(in: context.bag)
        items.bind { items in
            summary.text = items.isEmpty ? "nothing to do" : "\(items.filter(\.done).count) of \(items.count) done"
        }.store(in: context.bag)

        input.onSubmit { [unowned context, unowned input] text in
            let title = text.trimmingCharacters(in: .whitespaces)
            guard !title.isEmpty else { return }
            // Cleared at once, so typing the next one can start before the ack; given back on failure.
            input.text = ""
            if await !context.send("add", ["title": .string(title)]), input.text.isEmpty { input.text = text }
        }
        let listBox = Box(title: "To-dos", list)
        let stack = Stack(.vertical, [Box(title: "Add", input), listBox, row([toggle, delete, clear]), summary])
        stack.setSize(.fill(), of: listBox)
        body = stack
        list.onSelect { [unowned self] _ in self.act(on: "toggle") }
        toggle.onPress { [unowned self] in self.act(on: "toggle") }
        delete.onPress { [unowned self] in self.act(on: "remove") }
    }

    static func line(_ item: Item) -> Line {
        Line([Span(item.done ? "[x] " : "[ ] ", style: Style(fg: item.done ? .green : nil)), Span(item.title, style: Style(dim: item.done))])
    }

    /// Sends `action` with the selected item's id.
    private func act(on action: String) {
        guard let index = list.selectedIndex, index < items.count else { return }
        context.perform(action, ["id": .string(items[index].id)])
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char(" "): act(on: "toggle")
        case .delete: act(on: "remove")
        default: return false
        }
        return true
    }
}
