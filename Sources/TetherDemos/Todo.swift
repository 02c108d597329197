import Foundation
import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherState

/// `TodoContract`'s ViewModel. Every change addresses one item (`add /items/3`,
/// `replace /items/2/done`, `remove /items/1`), never the whole array.
public final class Todo: ViewModel, TodoContract.Implementation {
    public typealias Item = TodoContract.Item

    static let maximumItems = 1_000
    static let maximumTitleLength = 200

    public let items = ObservableList<Item>()

    public init(context: ViewModelContext) {}

    func index(of id: String) throws -> Int {
        guard let index = items.firstIndex(where: { $0.id == id }) else {
            throw Refusal(TodoContract.Failure.noSuchItem, "no item with id \"\(id)\"")
        }
        return index
    }

    /// Ids are "t1", "t2", ...: one more than the largest in the list, so they stay unique after
    /// a restart too.
    func nextID() -> String {
        let largest = items.compactMap { $0.id.hasPrefix("t") ? Int($0.id.dropFirst()) : nil }.max() ?? 0
        return "t\(largest + 1)"
    }

    static func checkedTitle(_ title: String) throws -> String {
        let trimmed = title.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw TodoContract.Failure.emptyTitle }
        guard trimmed.count <= maximumTitleLength else { throw TodoContract.Failure.titleTooLong }
        return trimmed
    }

    public static let actions = ActionTable(TodoContract.binding(Todo.self))

    public func add(title: String) throws {
        let title = try Self.checkedTitle(title)
        guard items.count < Self.maximumItems else { throw TodoContract.Failure.full }
        items.append(Item(id: nextID(), title: title, done: false))
    }

    public func toggle(id: String) throws {
        try items.update(at: index(of: id)) { $0.done.toggle() }
    }

    public func rename(id: String, title: String) throws {
        let title = try Self.checkedTitle(title)
        try items.update(at: index(of: id)) { $0.title = title }
    }

    public func remove(id: String) throws {
        try items.remove(at: index(of: id))
    }

    public func clearCompleted() {
        items.removeAll { $0.done }
    }
}
