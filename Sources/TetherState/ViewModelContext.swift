import FoundationEssentials
import TetherBinding
import TetherJSON

/// What a ViewModel's initializer receives: the place to declare its published state under
/// names, and its timers. Each published observable becomes one top-level member of the room's
/// JSON document; its changes become operations at that member's path only.
public final class ViewModelContext {
    /// The full room name, e.g. "todo:team-a".
    public let room: String
    /// The part after the colon ("team-a"), or nil for a bare kind name.
    public let instance: String?
    /// Who is in the room (empty in rooms without presence).
    public let presence = Presence()

    /// State the ViewModel keeps for itself: stored with the room, in the same step as the
    /// changes it goes with, and never sent to a client (`context.stored.map("ballots")`).
    public let stored = StoredState()

    /// The published members: the room's shared document.
    let published = StateMembers()
    var document: StateDocument { published.document }
    private(set) var timers: [ViewModelTimer] = []
    /// Values published per viewer (`perViewer`, Viewer.swift).
    var perViewerValues: [PerViewerValue] = []

    public init(room: String) {
        self.room = room
        if let colon = room.firstIndex(of: ":") {
            instance = String(room[room.index(after: colon)...])
        } else {
            instance = nil
        }
    }

    // MARK: Declaring state

    /// A writable value published at `/name`. Every assignment becomes one `replace /name`
    /// (none when the encoded value is unchanged).
    public func property<Value: Codable & SendableMetatype>(_ name: String, _ initial: Value) -> Observable<Value> {
        checkSharedName(name)
        return published.property(name, initial)
    }

    /// Publishes a derived, read-only observable at `/name` (for example a `combineLatest`
    /// of private inputs). It is recomputed, not restored, after a restart.
    public func publish<Value: Encodable>(_ name: String, _ observable: ReadOnlyObservable<Value>) {
        checkSharedName(name)
        published.publish(name, observable)
    }

    /// An ordered list published at `/name`. Each insert, remove and replace becomes one
    /// operation at `/name/i`; a replaced object element yields operations on its changed
    /// members only (`replace /name/i/done`).
    public func list<Element: Codable & SendableMetatype>(_ name: String, _ initial: [Element] = []) -> ObservableList<Element> {
        checkSharedName(name)
        return published.list(name, initial)
    }

    /// A keyed map published as an object at `/name`. Setting a key becomes one `add` (new key)
    /// or `replace` (existing key) at `/name/key`; removing it one `remove`.
    public func map<Value: Codable & SendableMetatype>(_ name: String, _ initial: [String: Value] = [:]) -> ObservableMap<String, Value> {
        checkSharedName(name)
        return published.map(name, initial)
    }

    // MARK: Timers

    /// Runs `tick` every `interval` on the room's executor while the room lives, and once when
    /// the room starts, before its first snapshot (so values a timer keeps current are current
    /// in a room restored from storage); the changes a tick makes are broadcast as one patch,
    /// like an action's.
    public func every(_ interval: Duration, _ tick: @escaping () -> Void) {
        timers.append(ViewModelTimer(interval: interval, tick: tick))
    }

    // MARK: Time and chance

    /// The wall-clock time of the turn being run, the same for every read in one turn. Read it
    /// here, not with `Date()`: the step records it, and a replay of the room's history
    /// (`TestRoom.replay`) gives the ViewModel the same time back.
    public var now: Date { inputs.now }

    /// Random numbers for the turn being run, from a seed the step records (for replays, as
    /// `now`): `var random = context.random; Int.random(in: 1...6, using: &random)`.
    public var random: TurnRandom { inputs.random }

    let inputs = TurnInputs()

    // MARK: Restore and snapshot

    /// The document's encoded size as the limit check sees it (exact or a little high).
    public var documentSizeEstimate: Int { document.estimatedEncodedSize }

    /// The document rebuilt from the observables' current values. Equal to `document.state`
    /// whenever the event-to-operation mapping is right; tests check exactly that.
    public func freshSnapshot() -> JSON { published.freshSnapshot() }

    /// Sets every writable published member from a stored document, recording no operations.
    /// Members missing from `state` keep their initial values.
    func restore(from state: JSON) throws { try published.restore(from: state) }

    // MARK: Encoding

    static func encode<Value: Encodable>(_ value: Value) -> JSON {
        if let json = value as? JSON { return json }
        do {
            return try JSONValueEncoder().encode(value)
        } catch {
            preconditionFailure("ViewModel state of type \(Value.self) failed to encode as JSON: \(error)")
        }
    }

    /// The operations turning one list element into another: per member when both are objects,
    /// else one replace of the element.
    static func elementChanges(at path: JSONPointer, from old: JSON, to new: JSON) -> [PatchOperation] {
        guard case .object(let before) = old, case .object(let after) = new else {
            return old == new ? [] : [.replace(path: path, value: new)]
        }
        var operations: [PatchOperation] = []
        for key in Set(before.keys).union(after.keys).sorted() {
            switch (before[key], after[key]) {
            case let (nil, added?): operations.append(.add(path: path.appending(key), value: added))
            case (_?, nil): operations.append(.remove(path: path.appending(key)))
            case let (was?, now?) where was != now: operations.append(.replace(path: path.appending(key), value: now))
            default: break
            }
        }
        return operations
    }
}

/// A periodic tick a ViewModel asked for.
public struct ViewModelTimer {
    public let interval: Duration
    public let tick: () -> Void
}
