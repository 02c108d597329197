import Testing
import TetherContract
import TetherJSON
import TetherServer
import TetherState

/// One ViewModel under test, a turn at a time, in the spirit of TCA's `TestStore`: every action
/// and timer tick states the exact JSON Patch operations it produces, and a change the test did
/// not assert fails it. No server, no sockets: the room's turn as the server runs it
/// (`ViewModelHost.perform`, then `finishTurn(maxEncodedSize:)`), on the test's thread.
///
/// ```swift
/// let room = TestRoom(Counter.self)
/// try room.send("increment", ["by": 2], produces: [.replace(path: "/count", value: 2)])
/// room.send("increment", ["by": "x"], fails: .invalidArgs("expected number at args.by, got string"))
/// #expect(room.state == ["count": 2])
/// ```
///
/// After every turn it also checks what a client relies on: applying the turn's patch to the
/// document before it gives the document after it, and the document equals a fresh encoding of
/// the published observables (`ViewModelContext.freshSnapshot()`). Failures are recorded with
/// `Issue.record` at the caller's line.
public final class TestRoom<Model: ViewModel> {
    /// The room's name ("counter", "todo:team-a"): the ViewModel sees it as `context.room`.
    public let name: String
    /// The hosted instance, as a room drives it.
    public let host: ViewModelHost
    /// The server's `--max-state-bytes` for this room: a turn past it is taken back (`tooLarge`).
    public let maxStateBytes: Int
    /// The room's version: one more for every turn that changed something.
    public private(set) var version = 0

    /// The room's current JSON document.
    public var state: JSON { host.state }

    /// The ViewModel's stored state (`context.stored`): never published, restored after a restart.
    public var stored: JSON { host.storedState }

    /// Viewers whose projections every turn checks (`watch(as:)`), with what they last saw.
    private var watched: [Viewer: [String: JSON]] = [:]

    /// `viewer`'s document: the shared one plus their per-viewer values.
    public func state(for viewer: Viewer) -> JSON { host.state(for: viewer) }

    /// From now on every turn must state the changes of `viewer`'s per-viewer values in its
    /// `views` (none by default), as the shared ones in `produces`; returns their document now.
    @discardableResult
    public func watch(as viewer: Viewer) -> JSON {
        watched[viewer] = host.projection(for: viewer)
        return state(for: viewer)
    }

    /// The ViewModel itself, to read what it keeps unpublished.
    public var model: Model {
        guard let model = host.model(as: Model.self) else { preconditionFailure("TestRoom hosts a \(Model.self)") }
        return model
    }

    /// The intervals of the timers the ViewModel started, in the order `tick(timer:)` counts them.
    public var timerIntervals: [Duration] { host.timers.map(\.interval) }

    /// A new instance of `Model` in a room named `room` (default: the type's name in lower
    /// case), optionally restored from a stored document (and stored state) as after a restart.
    public init(_ type: Model.Type, room: String? = nil, restoring document: JSON? = nil, stored: JSON? = nil,
                maxStateBytes: Int = ServerConfiguration().maxStateBytes,
                sourceLocation: SourceLocation = #_sourceLocation) {
        let name = room ?? String(describing: Model.self).lowercased()
        let kindName = String(name.prefix { $0 != ":" })
        self.name = name
        self.maxStateBytes = maxStateBytes
        host = ViewModelKind(kindName, scope: .shared, Model.self).instantiate(room: name)
        if document != nil || stored != nil {
            do {
                try host.restore(from: document ?? host.state, stored: stored)
            } catch {
                Issue.record("the stored state does not restore into \(Model.self): \(error)", sourceLocation: sourceLocation)
            }
        }
        checkDocumentMatchesObservables(after: "the initializer", sourceLocation)
    }

    // MARK: Actions

    /// Performs an action that must succeed and produce exactly `expected`, in order (nothing,
    /// by default). `state`, if given, must be the whole document afterwards. An error from the
    /// action is thrown (it fails the test unless the test expects it); use
    /// `send(_:_:fails:produces:)` to assert one.
    @discardableResult
    public func send(_ action: String, _ args: JSON? = nil, as viewer: Viewer = .unidentified, produces expected: [PatchOperation] = [],
                     views expectedViews: [Viewer: [PatchOperation]] = [:], state expectedState: JSON? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) throws -> [PatchOperation] {
        let (operations, error) = turn(describedAs: "action \"\(action)\"", expectedViews, sourceLocation) {
            try host.perform(action, args: args, viewer: viewer)
        }
        if let error { throw error }
        check("action \"\(action)\"", produced: operations, expected: expected, expectedState: expectedState, sourceLocation)
        return operations
    }

    /// Performs an action whose expected operations depend on the new document (a generated id,
    /// the current time): `expected` receives the document after the turn.
    @discardableResult
    public func send(_ action: String, _ args: JSON? = nil, produces expected: (_ newState: JSON) -> [PatchOperation],
                     sourceLocation: SourceLocation = #_sourceLocation) throws -> [PatchOperation] {
        let (operations, error) = turn(describedAs: "action \"\(action)\"", [:], sourceLocation) { try host.perform(action, args: args) }
        if let error { throw error }
        check("action \"\(action)\"", produced: operations, expected: expected(state), expectedState: nil, sourceLocation)
        return operations
    }

    /// Performs an action that must fail with `error`. A failed turn is taken back, as the
    /// server does: the published and stored values are as before it, and it produces nothing
    /// (unless a viewer's projection reads a plain property the handler changed before it threw).
    @discardableResult
    public func send(_ action: String, _ args: JSON? = nil, as viewer: Viewer = .unidentified, fails expectedError: ActionError,
                     produces expected: [PatchOperation] = [], sourceLocation: SourceLocation = #_sourceLocation) -> [PatchOperation] {
        let (operations, error) = turn(describedAs: "action \"\(action)\"", [:], sourceLocation) {
            try host.perform(action, args: args, viewer: viewer)
        }
        switch error {
        case nil:
            Issue.record("action \"\(action)\" succeeded; expected it to fail with \(Self.describe(expectedError))", sourceLocation: sourceLocation)
        case let actual as ActionError where actual != expectedError:
            Issue.record("action \"\(action)\" failed with \(Self.describe(actual)); expected \(Self.describe(expectedError))",
                         sourceLocation: sourceLocation)
        case is ActionError:
            break
        case let other?:
            Issue.record("action \"\(action)\" threw \(other), which clients see as `internal`; expected \(Self.describe(expectedError))",
                         sourceLocation: sourceLocation)
        }
        check("action \"\(action)\"", produced: operations, expected: expected, expectedState: nil, sourceLocation)
        return operations
    }

    // MARK: Timers

    /// Runs one tick of the ViewModel's `timer`-th timer (in the order it started them), which
    /// must produce exactly `expected`.
    @discardableResult
    public func tick(timer index: Int, produces expected: [PatchOperation] = [], state expectedState: JSON? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) -> [PatchOperation] {
        tick(timer: index, produces: { _ in expected }, state: expectedState, sourceLocation: sourceLocation)
    }

    /// A tick whose expected operations depend on the new document (the current time).
    @discardableResult
    public func tick(timer index: Int, produces expected: (_ newState: JSON) -> [PatchOperation], state expectedState: JSON? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) -> [PatchOperation] {
        guard host.timers.indices.contains(index) else {
            Issue.record("\(Model.self) has \(host.timers.count) timer(s); there is no timer \(index)", sourceLocation: sourceLocation)
            return []
        }
        let (operations, error) = turn(describedAs: "timer \(index)", [:], sourceLocation) { host.timers[index].tick() }
        if let error {
            Issue.record("timer \(index)'s tick was taken back: \(error)", sourceLocation: sourceLocation)
        }
        check("timer \(index)", produced: operations, expected: expected(state), expectedState: expectedState, sourceLocation)
        return operations
    }

    // MARK: Presence

    /// A member arrives or changes its data, as the room's presence reports it to the ViewModel
    /// (`context.presence.members`); the ViewModel's reaction must produce exactly `expected`.
    @discardableResult
    public func presence(_ member: PresenceMember, produces expected: [PatchOperation] = [], state expectedState: JSON? = nil,
                         sourceLocation: SourceLocation = #_sourceLocation) -> [PatchOperation] {
        presenceTurn("presence of \(member.id)", produces: expected, state: expectedState, sourceLocation) { host.presenceChanged(member) }
    }

    /// A member leaves (leave, disconnect, keepalive timeout); the reaction must produce exactly `expected`.
    @discardableResult
    public func leave(member id: String, produces expected: [PatchOperation] = [], state expectedState: JSON? = nil,
                      sourceLocation: SourceLocation = #_sourceLocation) -> [PatchOperation] {
        presenceTurn("member \(id) leaving", produces: expected, state: expectedState, sourceLocation) { host.presenceLeft(memberID: id) }
    }

    private func presenceTurn(_ what: String, produces expected: [PatchOperation], state expectedState: JSON?,
                              _ sourceLocation: SourceLocation, _ change: () -> Void) -> [PatchOperation] {
        let (operations, error) = turn(describedAs: what, [:], sourceLocation, change)
        if let error { Issue.record("the reaction to \(what) was taken back: \(error)", sourceLocation: sourceLocation) }
        check(what, produced: operations, expected: expected, expectedState: expectedState, sourceLocation)
        return operations
    }

    // MARK: One turn

    /// Runs `body` as the server runs a turn: its changes (taken back if it throws), then
    /// `finishTurn`, which may take the turn back for size. Returns the turn's operations and the error the sender would get.
    private func turn(describedAs what: String, _ expectedViews: [Viewer: [PatchOperation]], _ sourceLocation: SourceLocation,
                      _ body: () throws -> Void) -> (operations: [PatchOperation], error: (any Error)?) {
        let before = host.state
        let storedBefore = host.storedState
        var failure: (any Error)?
        do { try body() } catch {
            failure = error
            host.takeBackTurn()
        }
        var operations: [PatchOperation] = []
        do {
            operations = try host.finishTurn(maxEncodedSize: maxStateBytes)
        } catch {
            failure = error
        }
        let storedOperations = host.takeStoredChanges()
        let viewChanges = checkViews(after: what, expected: expectedViews, shared: operations, sharedBefore: before, sourceLocation)
        if !operations.isEmpty || !storedOperations.isEmpty || viewChanges { version += 1 }
        checkPatchReplays(operations, onto: before, after: what, sourceLocation)
        checkStoredReplays(storedOperations, onto: storedBefore, after: what, sourceLocation)
        checkDocumentMatchesObservables(after: what, sourceLocation)
        return (operations, failure)
    }

    // MARK: Checks

    /// Each watched viewer's projection change must be the one the test states, and their
    /// frame (the shared operations, then theirs) must take their document before the turn to
    /// theirs after it. Returns whether any viewer's values changed (a version step for all).
    private func checkViews(after what: String, expected: [Viewer: [PatchOperation]], shared: [PatchOperation], sharedBefore: JSON,
                            _ sourceLocation: SourceLocation) -> Bool {
        for viewer in expected.keys where watched[viewer] == nil {
            Issue.record("\(what): views names viewer \"\(viewer.id)\", which the test does not watch (watch(as:))", sourceLocation: sourceLocation)
        }
        var anyChanged = false
        for (viewer, before) in watched.sorted(by: { $0.key.id < $1.key.id }) {
            let after = host.projection(for: viewer)
            let changes = Projection.changes(from: before, to: after)
            anyChanged = anyChanged || !changes.isEmpty
            watched[viewer] = after
            if changes != (expected[viewer] ?? []) {
                Issue.record(Comment(rawValue: "\(what) changed what viewer \"\(viewer.id)\" sees by \(Self.describe(changes)); "
                                     + "the test asserted \(Self.describe(expected[viewer] ?? []))"), sourceLocation: sourceLocation)
            }
            var replayed = Projection.document(shared: sharedBefore, projection: before)
            do {
                try replayed.apply(shared + changes)
            } catch {
                Issue.record(Comment(rawValue: "\(what): viewer \"\(viewer.id)\"'s frame does not apply to their document: \(error)"), sourceLocation: sourceLocation)
                continue
            }
            if replayed != host.state(for: viewer) {
                Issue.record(Comment(rawValue: "\(what): viewer \"\(viewer.id)\"'s frame gives \(Self.describe(replayed)), but their document is "
                                     + Self.describe(host.state(for: viewer))), sourceLocation: sourceLocation)
            }
        }
        return anyChanged
    }

    private func check(_ what: String, produced: [PatchOperation], expected: [PatchOperation], expectedState: JSON?,
                       _ sourceLocation: SourceLocation) {
        if produced != expected {
            var unasserted = produced
            var missing: [PatchOperation] = []
            for operation in expected {
                if let index = unasserted.firstIndex(of: operation) { unasserted.remove(at: index) } else { missing.append(operation) }
            }
            var lines = ["\(what) produced other operations than the test asserted."]
            if !unasserted.isEmpty { lines.append("Produced, not asserted: \(Self.describe(unasserted))") }
            if !missing.isEmpty { lines.append("Asserted, not produced: \(Self.describe(missing))") }
            if unasserted.isEmpty && missing.isEmpty { lines.append("The same operations in another order.") }
            lines.append("Produced: \(Self.describe(produced))")
            Issue.record(Comment(rawValue: lines.joined(separator: "\n")), sourceLocation: sourceLocation)
        }
        if let expectedState, state != expectedState {
            Issue.record(Comment(rawValue: "after \(what) the state is \(Self.describe(state)); expected \(Self.describe(expectedState))"),
                         sourceLocation: sourceLocation)
        }
    }

    /// A client holding the document before the turn must reach the document after it with the
    /// turn's patch alone.
    private func checkPatchReplays(_ operations: [PatchOperation], onto before: JSON, after what: String, _ sourceLocation: SourceLocation) {
        var replayed = before
        do {
            try replayed.apply(operations)
        } catch {
            Issue.record(Comment(rawValue: "\(what)'s patch does not apply to the document before it: \(error)"), sourceLocation: sourceLocation)
            return
        }
        if replayed != host.state {
            Issue.record(Comment(rawValue: "\(what)'s patch applied to the document before it gives \(Self.describe(replayed)), "
                                 + "but the room's document is \(Self.describe(host.state))"), sourceLocation: sourceLocation)
        }
    }

    /// The store keeps the stored state as each turn's operations: replayed onto the stored state
    /// before the turn they must give the one after it, which must equal its observables encoded
    /// afresh (or a restored room would continue from other values than the ViewModel had).
    private func checkStoredReplays(_ operations: [PatchOperation], onto before: JSON, after what: String, _ sourceLocation: SourceLocation) {
        var replayed = before
        do {
            try replayed.apply(operations)
        } catch {
            Issue.record(Comment(rawValue: "\(what)'s stored operations do not apply to the stored state before it: \(error)"), sourceLocation: sourceLocation)
            return
        }
        if replayed != host.storedState {
            Issue.record(Comment(rawValue: "\(what)'s stored operations give \(Self.describe(replayed)), but the stored state is \(Self.describe(host.storedState))"),
                         sourceLocation: sourceLocation)
        }
        let fresh = host.context.stored.freshSnapshot()
        if fresh != host.storedState {
            Issue.record(Comment(rawValue: "after \(what) the stored state \(Self.describe(host.storedState)) differs from its observables encoded afresh, "
                                 + "\(Self.describe(fresh))"), sourceLocation: sourceLocation)
        }
    }

    /// The document is kept by operations alone; it must equal the observables encoded afresh,
    /// or clients hold a state the ViewModel does not.
    private func checkDocumentMatchesObservables(after what: String, _ sourceLocation: SourceLocation) {
        let fresh = host.context.freshSnapshot()
        guard fresh != host.state else { return }
        let members = Set(fresh.objectKeys + host.state.objectKeys).sorted().filter { fresh[$0] != host.state[$0] }
        Issue.record(Comment(rawValue: "after \(what) the document differs from a fresh encoding of the observables at "
                             + members.map { "/\($0)" }.joined(separator: ", ")
                             + ": document \(Self.describe(host.state)), observables \(Self.describe(fresh)) "
                             + "(a change that bypassed the observables, e.g. a mutated reference)"), sourceLocation: sourceLocation)
    }

    // MARK: Descriptions

    static func describe(_ operations: [PatchOperation]) -> String {
        describe(.array(operations.map(\.json)))
    }

    static func describe(_ json: JSON) -> String {
        String(decoding: json.encoded(), as: UTF8.self)
    }

    static func describe(_ error: ActionError) -> String {
        switch error {
        case .unknownAction(let name): return ".unknownAction(\"\(name)\")"
        case .invalidArgs(let reason): return ".invalidArgs(\"\(reason)\")"
        case .tooLarge(let reason): return ".tooLarge(\"\(reason)\")"
        case .refused(let reason, let code, let message): return ".refused(reason: \"\(reason)\", code: .\(code), message: \"\(message)\")"
        }
    }
}

private extension JSON {
    var objectKeys: [String] {
        if case .object(let members) = self { return Array(members.keys) }
        return []
    }
}
