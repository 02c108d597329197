/// A value over time that anyone may read and listen to.
///
/// Threading rule: an observable is not thread-safe and is not `Sendable`. It belongs to one
/// isolation domain (on the server, the room's serial executor; on a client, the main actor),
/// and only code running there may read it, mutate it or bind to it. Listeners run
/// synchronously, on that same executor, inside the mutation, in the order they were bound.
///
/// `ReadOnlyObservable` is what derived values (`map`, `combineLatest`, ...) are; `Observable`
/// adds a setter.
public class ReadOnlyObservable<Value> {
    fileprivate var storage: Value
    fileprivate let listeners = ListenerSet<Value>()
    /// Tokens on the sources a derived observable is computed from.
    fileprivate var upstream: [Cancellable] = []

    fileprivate init(storage: Value) {
        self.storage = storage
    }

    public var value: Value { storage }

    /// A value that never changes (a ViewModel's constant member, published read-only).
    public static func constant(_ value: Value) -> ReadOnlyObservable<Value> {
        ReadOnlyObservable(storage: value)
    }

    /// Calls `listener` at once with the current value, then on every change, until the
    /// returned token is cancelled or released.
    public func bind(_ listener: @escaping (Value) -> Void) -> Cancellable {
        let token = listeners.add(retaining: self, listener)
        listener(storage)
        return token
    }

    /// Like `bind`, without the immediate call: only changes.
    public func observe(_ listener: @escaping (Value) -> Void) -> Cancellable {
        listeners.add(retaining: self, listener)
    }

    public var listenerCount: Int { listeners.count }

    fileprivate func publish(_ newValue: Value) {
        storage = newValue
        listeners.emit(newValue)
    }
}

/// A mutable observable: every assignment to `value` notifies every listener (like the seeds'
/// `didSet`), including assignments of an equal value; use `removeDuplicates` to filter those.
public final class Observable<Value>: ReadOnlyObservable<Value> {
    public init(_ value: Value) {
        super.init(storage: value)
    }

    public override var value: Value {
        get { storage }
        set { publish(newValue) }
    }
}

// MARK: - Operators

extension ReadOnlyObservable {
    /// A derived observable holding `transform(value)`, updated on every change of this one.
    public func map<Result>(_ transform: @escaping (Value) -> Result) -> ReadOnlyObservable<Result> {
        let derived = ReadOnlyObservable<Result>(storage: transform(storage))
        derived.upstream.append(observe { [weak derived] value in
            derived?.publish(transform(value))
        })
        return derived
    }
}

extension ReadOnlyObservable where Value: Equatable {
    /// A derived observable that notifies only when the value actually changes.
    public func removeDuplicates() -> ReadOnlyObservable<Value> {
        let derived = ReadOnlyObservable<Value>(storage: storage)
        derived.upstream.append(observe { [weak derived] value in
            guard let derived, derived.storage != value else { return }
            derived.publish(value)
        })
        return derived
    }
}

/// The latest values of two observables as a pair, updated when either changes.
public func combineLatest<A, B>(
    _ a: ReadOnlyObservable<A>, _ b: ReadOnlyObservable<B>
) -> ReadOnlyObservable<(A, B)> {
    let derived = ReadOnlyObservable<(A, B)>(storage: (a.value, b.value))
    derived.upstream.append(a.observe { [weak derived, unowned b] value in derived?.publish((value, b.value)) })
    derived.upstream.append(b.observe { [weak derived, unowned a] value in derived?.publish((a.value, value)) })
    return derived
}

/// The latest values of three observables, updated when any of them changes.
public func combineLatest<A, B, C>(
    _ a: ReadOnlyObservable<A>, _ b: ReadOnlyObservable<B>, _ c: ReadOnlyObservable<C>
) -> ReadOnlyObservable<(A, B, C)> {
    let derived = ReadOnlyObservable<(A, B, C)>(storage: (a.value, b.value, c.value))
    derived.upstream.append(a.observe { [weak derived, unowned b, unowned c] value in
        derived?.publish((value, b.value, c.value))
    })
    derived.upstream.append(b.observe { [weak derived, unowned a, unowned c] value in
        derived?.publish((a.value, value, c.value))
    })
    derived.upstream.append(c.observe { [weak derived, unowned a, unowned b] value in
        derived?.publish((a.value, b.value, value))
    })
    return derived
}
