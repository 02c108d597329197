import TetherContract
import TetherContractMacro

/// A shared to-do list; every change addresses one item.
@Contract("todo")
public enum TodoContract {
    public struct Item: Codable, Sendable, Equatable {
        public var id: String
        public var title: String
        public var done: Bool
        public init(id: String, title: String, done: Bool) {
            self.id = id
            self.title = title
            self.done = done
        }
    }
    public struct State: Codable, Sendable, Equatable {
        public var items: [Item] = []
        public init() {}
    }
    public enum Failure: String, ContractFailure {
        case emptyTitle, titleTooLong, full, noSuchItem
        public var code: RefusalCode { self == .full ? .tooLarge : .invalidArgs }
        public var message: String {
            switch self {
            case .emptyTitle: "title must not be empty"
            case .titleTooLong: "title is longer than 200 characters"
            case .full: "the list holds at most 1000 items"
            case .noSuchItem: "no such item"
            }
        }
    }
    public protocol Actions {
        func add(title: String) throws
        func toggle(id: String) throws
        func rename(id: String, title: String) throws
        func remove(id: String) throws
        func clearCompleted()
    }
}
