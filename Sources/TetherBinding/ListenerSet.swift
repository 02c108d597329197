/// The listeners of one observable, called in the order they were added.
///
/// Shared by `Observable`, `ObservableList` and `ObservableMap` so that they all behave the
/// same: a listener cancelled during a notification is not called afterwards, and a listener
/// added during a notification first hears the next one.
public struct ListenerSet<Event> {
    private final class Entry {
        var listener: ((Event) -> Void)?
        init(_ listener: @escaping (Event) -> Void) { self.listener = listener }
    }

    private final class Storage {
        var entries: [Entry] = []
    }

    private let storage = Storage()

    public init() {}

    public var isEmpty: Bool { storage.entries.isEmpty }
    public var count: Int { storage.entries.count }

    /// Adds a listener. `retaining` is kept alive by the token (an observable keeps its
    /// upstream alive this way while anyone listens to it).
    public func add(retaining owner: AnyObject? = nil, _ listener: @escaping (Event) -> Void) -> Cancellable {
        let entry = Entry(listener)
        storage.entries.append(entry)
        return Cancellable { [weak storage] in
            _ = owner  // keep the owner until cancelled
            entry.listener = nil
            storage?.entries.removeAll { $0 === entry }
        }
    }

    public func emit(_ event: Event) {
        // Iterate over a snapshot: listeners may cancel or add during the loop.
        for entry in storage.entries {
            entry.listener?(event)
        }
    }
}
