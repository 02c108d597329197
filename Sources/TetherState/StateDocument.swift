import TetherJSON

/// The JSON document of one ViewModel instance, kept current by its observables, plus the
/// operations recorded since the last turn.
///
/// Nothing here compares documents: each observable reports its own change, which becomes
/// operations at that observable's path. Same threading rule as the observables.
public final class StateDocument {
    public private(set) var state: JSON = .object([:])
    private var pending: [PatchOperation] = []
    /// While restoring persisted state, changes rebuild the document but record no operations.
    private var isRestoring = false

    init() {}

    public var hasChanges: Bool { !pending.isEmpty }

    /// The operations of the current turn, in order; clears them.
    public func takeChanges() -> [PatchOperation] {
        defer { pending.removeAll(keepingCapacity: true) }
        return pending
    }

    /// Sets a top-level member without recording an operation (declaring state, restoring).
    func define(_ name: String, _ value: JSON) {
        guard var object = state.takeObject() else { return }
        object[name] = value
        state = .object(object)
    }

    func record(_ operation: PatchOperation) {
        do {
            try state.apply(operation)
        } catch {
            // Operations come from our own observables' events, so they always apply; if one
            // doesn't, the mapping from events to operations is broken.
            preconditionFailure("StateDocument: observable change produced an invalid operation \(operation): \(error)")
        }
        if !isRestoring { pending.append(operation) }
    }

    func restoring(_ body: () throws -> Void) rethrows {
        isRestoring = true
        defer { isRestoring = false }
        try body()
    }
}
