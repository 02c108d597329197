import Foundation
import TetherBinding
import TetherJSON
import TetherState

/// A shared to-do list. Every change addresses one item (`add /items/3`,
/// `replace /items/2/done`, `remove /items/1`), never the whole array.
public final class Todo: ViewModel {
    public struct Item: Codable, Equatable, Sendable {
        public var id: String
        public var title: String
        public var done: Bool
    }

    static let maximumItems = 1_000
    static let maximumTitleLength = 200

    let items: ObservableList<Item>

    public init(context: ViewModelContext) {
        items = context.list("items", [Item]())
    }

    func index(of id: String) throws -> Int {
        guard let index = items.firstIndex(where: { $0.id == id }) else {
            throw ActionError.invalidArgs("no item with id \"\(id)\"")
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
        guard !trimmed.isEmpty else { throw ActionError.invalidArgs("title must not be empty") }
        guard trimmed.count <= maximumTitleLength else {
            throw ActionError.invalidArgs("title is longer than \(maximumTitleLength) characters")
        }
        return trimmed
    }

    struct Title: Decodable { var title: String }
    struct ID: Decodable { var id: String }
    struct Rename: Decodable { var id: String; var title: String }

    public static let actions = ActionTable<Todo>()
        .on("add", Title.self) { model, args in
            let title = try checkedTitle(args.title)
            guard model.items.count < maximumItems else {
                throw ActionError.tooLarge("the list holds at most \(maximumItems) items")
            }
            model.items.append(Item(id: model.nextID(), title: title, done: false))
        }
        .on("toggle", ID.self) { model, args in
            try model.items.update(at: model.index(of: args.id)) { $0.done.toggle() }
        }
        .on("rename", Rename.self) { model, args in
            let title = try checkedTitle(args.title)
            try model.items.update(at: model.index(of: args.id)) { $0.title = title }
        }
        .on("remove", ID.self) { model, args in
            try model.items.remove(at: model.index(of: args.id))
        }
        .on("clearCompleted") { model in
            model.items.removeAll { $0.done }
        }
}
