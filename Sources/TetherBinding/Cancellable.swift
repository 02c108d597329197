/// The token a `bind` or `observe` returns. The listener is called until the token is
/// cancelled or released, whichever comes first.
public final class Cancellable: Hashable {
    private var onCancel: (() -> Void)?

    public init(_ onCancel: @escaping () -> Void) {
        self.onCancel = onCancel
    }

    /// Stops the calls. Idempotent.
    public func cancel() {
        let action = onCancel
        onCancel = nil
        action?()
    }

    public var isCancelled: Bool { onCancel == nil }

    /// Keeps the token alive as long as `bag`.
    public func store(in bag: CancellableBag) {
        bag.insert(self)
    }

    deinit { cancel() }

    public static func == (lhs: Cancellable, rhs: Cancellable) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Holds tokens for the lifetime of an owner (a screen, a ViewModel). Releasing the bag, or
/// calling `cancelAll`, cancels every binding in it.
public final class CancellableBag {
    private var tokens: [Cancellable] = []

    public init() {}

    public func insert(_ token: Cancellable) { tokens.append(token) }

    public func cancelAll() {
        let all = tokens
        tokens.removeAll()
        for token in all { token.cancel() }
    }

    public var count: Int { tokens.count }

    deinit { cancelAll() }
}
