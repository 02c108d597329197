import TetherJSON

/// The JSON document of one ViewModel instance, kept current by its observables, plus the
/// operations recorded since the last turn.
///
/// Nothing here compares documents: each observable reports its own change, which becomes
/// operations at that observable's path. Same threading rule as the observables.
public final class StateDocument {
    public private(set) var state: JSON = .object([:])
    private var pending: [PatchOperation] = []
    /// The inverses of this turn's operations, so a refused turn can be taken back.
    private var undo: [PatchOperation] = []
    /// While restoring persisted state, changes rebuild the document but record no operations.
    private var isRestoring = false
    /// The encoded size of `state`, kept by adding each operation's difference. Object keys
    /// count a few bytes of punctuation they may not need, so it is an estimate that errs high;
    /// `measureEncodedSize()` makes it exact.
    public private(set) var estimatedEncodedSize = 2
    /// The encoded size of this turn's operations, estimated the same way (high).
    public private(set) var estimatedTurnSize = 0
    /// How much this turn grew the document (negative when it shrank it).
    public private(set) var turnGrowth = 0
    private var scratch: [UInt8] = []

    init() {}

    public var hasChanges: Bool { !pending.isEmpty }

    /// The operations of the current turn, in order; clears them (the turn is final).
    public func takeChanges() -> [PatchOperation] {
        defer {
            pending.removeAll(keepingCapacity: true)
            undo.removeAll(keepingCapacity: true)
            estimatedTurnSize = 0
            turnGrowth = 0
        }
        return pending
    }

    /// The document as it was before the current turn's operations.
    func stateBeforeTurn() -> JSON {
        var before = state
        var ignored: [PatchOperation] = []
        for inverse in undo.reversed() { try? before.apply(inverse, recordingInverseInto: &ignored) }
        return before
    }

    /// Forgets the current turn's operations (after the observables were put back).
    func discardTurn() {
        pending.removeAll(keepingCapacity: true)
        undo.removeAll(keepingCapacity: true)
        estimatedTurnSize = 0
        turnGrowth = 0
    }

    /// Encodes the document to make `estimatedEncodedSize` exact; returns it.
    @discardableResult
    public func measureEncodedSize() -> Int {
        scratch.removeAll(keepingCapacity: true)
        state.write(to: &scratch)
        estimatedEncodedSize = scratch.count
        if scratch.capacity > 64 << 10 { scratch = [] }  // don't keep a second copy of a big state
        return estimatedEncodedSize
    }

    /// Sets a top-level member without recording an operation (declaring state, restoring).
    func define(_ name: String, _ value: JSON) {
        guard var object = state.takeObject() else { return }
        object[name] = value
        state = .object(object)
        measureEncodedSize()
    }

    func record(_ operation: PatchOperation) {
        let undoCount = undo.count
        do {
            try state.apply(operation, recordingInverseInto: &undo)
        } catch {
            // Operations come from our own observables' events, so they always apply; if one
            // doesn't, the mapping from events to operations is broken.
            preconditionFailure("StateDocument: observable change produced an invalid operation \(operation): \(error)")
        }
        if isRestoring {
            undo.removeSubrange(undoCount...)
        } else {
            let (documentChange, operationSize) = sizes(operation, inverse: undo[undoCount...].first)
            estimatedEncodedSize += documentChange
            turnGrowth += documentChange
            estimatedTurnSize += operationSize
            pending.append(operation)
        }
    }

    func restoring(_ body: () throws -> Void) rethrows {
        isRestoring = true
        defer {
            isRestoring = false
            measureEncodedSize()
        }
        try body()
    }

    /// How much an applied operation changed the encoded document (from the operation and its
    /// inverse), and about how long the operation itself encodes. Observables produce only add,
    /// remove and replace.
    private func sizes(_ operation: PatchOperation, inverse: PatchOperation?) -> (document: Int, operation: Int) {
        // `{"op":"replace","path":"","value":}` and a comma are 36 bytes; a token's `~` and `/`
        // double in the pointer, so twice its escaped length bounds it.
        let envelope = 36 + 2 * operation.path.tokens.reduce(0) { $0 + escapedSize($1) + 1 }
        switch (operation, inverse) {
        case (.add(let path, let value), .remove?):
            let size = encodedSize(value)
            return (size + memberOverhead(path), size + envelope)
        case (.add(_, let value), .replace(_, let old)?), (.replace(_, let value), .replace(_, let old)?):
            let size = encodedSize(value)
            return (size - encodedSize(old), size + envelope)
        case (.remove(let path), .add(_, let old)?):
            return (-(encodedSize(old) + memberOverhead(path)), envelope)
        default:
            return (0, envelope)
        }
    }

    /// A member's punctuation: quotes, colon and comma around an object key (an array element
    /// needs only the comma; counting it as a key errs high).
    private func memberOverhead(_ path: JSONPointer) -> Int {
        (path.tokens.last.map(escapedSize) ?? 0) + 4
    }

    /// A string's length inside JSON quotes: control characters, quotes and backslashes need
    /// escapes (a key of 300 control characters encodes as 1,800 bytes, not 300).
    private func escapedSize(_ text: String) -> Int {
        var size = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x09, 0x0A, 0x0C, 0x0D: size += 2
            case ..<0x20: size += 6
            default: size += 1
            }
        }
        return size
    }

    private func encodedSize(_ value: JSON) -> Int {
        switch value {
        case .null: return 4
        case .bool(let b): return b ? 4 : 5
        default:
            scratch.removeAll(keepingCapacity: true)
            value.write(to: &scratch)
            return scratch.count
        }
    }
}
