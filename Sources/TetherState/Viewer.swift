import TetherContract
import TetherJSON

/// Who is looking at a room, or acting on it (declared in `TetherContract`, where contracts'
/// actions and per-viewer values name it).
public typealias Viewer = TetherContract.Viewer

/// A value of the document that depends on who looks: registered with
/// `ViewModelContext.perViewer`, recomputed for each viewer after every turn.
struct PerViewerValue {
    let name: String
    let project: (Viewer) -> JSON?
}

extension ViewModelContext {
    /// Publishes at `/name` of each viewer's document a value computed for that viewer, for
    /// example their own vote: `context.perViewer("mine") { viewer in choices[viewer.id] }`.
    ///
    /// A viewer's document is the shared document plus `{name: projection}` for every
    /// per-viewer value; `nil` leaves the member out. The server recomputes the projection of
    /// every viewer subscribed after each turn and sends each one only the change of their own
    /// (`add`, `replace` or `remove /name`), in the same version step as the shared changes.
    /// `name` must not be a shared member's name (checked here and when shared members are
    /// declared after it). The closure runs on the room's executor, like everything else.
    public func perViewer<Value: Encodable>(_ name: String, _ project: @escaping (Viewer) -> Value?) {
        precondition(document.state[name] == nil, "perViewer(\"\(name)\"): the room already publishes a shared member \"\(name)\"; a per-viewer key must differ from every shared key")
        precondition(!perViewerValues.contains { $0.name == name }, "perViewer(\"\(name)\") is declared twice")
        perViewerValues.append(PerViewerValue(name: name) { viewer in project(viewer).map { Self.encode($0) } })
    }

    /// Stops a shared member from taking a per-viewer key's name.
    func checkSharedName(_ name: String) {
        precondition(!perViewerValues.contains { $0.name == name }, "\"\(name)\" is already a per-viewer key (perViewer); a shared member must use another name")
    }
}

extension ViewModelHost {
    /// Whether the ViewModel publishes anything per viewer (`ViewModelContext.perViewer`).
    public var hasPerViewerValues: Bool { !context.perViewerValues.isEmpty }

    /// The per-viewer members of `viewer`'s document as they are now (absent ones left out).
    public func projection(for viewer: Viewer) -> [String: JSON] {
        var members: [String: JSON] = [:]
        for value in context.perViewerValues {
            if let json = value.project(viewer) { members[value.name] = json }
        }
        return members
    }

    /// `viewer`'s document: the shared document plus their projection.
    public func state(for viewer: Viewer) -> JSON {
        Projection.document(shared: state, projection: projection(for: viewer))
    }
}

/// How a viewer's projection joins the shared document.
public enum Projection {
    /// The shared document with the projection's members added (their keys never collide).
    public static func document(shared: JSON, projection: [String: JSON]) -> JSON {
        guard !projection.isEmpty, case .object(var members) = shared else { return shared }
        members.merge(projection) { _, own in own }
        return .object(members)
    }

    /// The operations that turn one projection into the next, by key: `add` for a new member,
    /// `replace` for a changed one, `remove` for one gone.
    public static func changes(from old: [String: JSON], to new: [String: JSON]) -> [PatchOperation] {
        var operations: [PatchOperation] = []
        for key in Set(old.keys).union(new.keys).sorted() {
            let path = JSONPointer(tokens: [key])
            switch (old[key], new[key]) {
            case let (nil, added?): operations.append(.add(path: path, value: added))
            case (_?, nil): operations.append(.remove(path: path))
            case let (was?, now?) where was != now: operations.append(.replace(path: path, value: now))
            default: break
            }
        }
        return operations
    }
}
