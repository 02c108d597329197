import TetherJSON
import TetherState

/// The per-viewer side of a room whose ViewModel publishes values per viewer
/// (`ViewModelContext.perViewer`): who each subscriber is, and each subscribed viewer's
/// projection as their subscribers hold it. On the room's executor (a `Room`, or on a cluster
/// each node's `ClusteredRoom`, whose projections come from the owner through the log).
///
/// A viewer's document is the shared document plus their projection. The room's version is one
/// counter for everyone: a version step's frame for a viewer is the shared operations followed by
/// the operations of that viewer's projection change, and subscribers whose projection
/// operations are byte for byte the same share one frame (most share the plain shared frame).
struct ViewerViews {
    private struct View {
        var projection: [String: JSON]
        /// This viewer's subscribed connections: deliveries are built per viewer, not per
        /// connection, so a turn looks up each viewer once.
        var sessions: [SessionHandle]
    }

    private var viewerOf: [SessionHandle: Viewer] = [:]
    private var views: [Viewer: View] = [:]

    /// Records `session` (as `session.viewer`); a second join with another token moves it.
    /// `project` gives a viewer new here their projection (the ViewModel's, or on a cluster
    /// node the one it knows).
    mutating func add(_ session: SessionHandle, project: (Viewer) -> [String: JSON]) {
        if let previous = viewerOf[session] {
            guard previous != session.viewer else { return }
            remove(session)
        }
        viewerOf[session] = session.viewer
        if views[session.viewer] != nil {
            views[session.viewer]!.sessions.append(session)
        } else {
            views[session.viewer] = View(projection: project(session.viewer), sessions: [session])
        }
    }

    mutating func remove(_ session: SessionHandle) {
        guard let viewer = viewerOf.removeValue(forKey: session) else { return }
        views[viewer]!.sessions.removeAll { $0 == session }
        if views[viewer]!.sessions.isEmpty { views[viewer] = nil }
    }

    /// What `session`'s document holds beyond the shared one.
    func projection(of session: SessionHandle) -> [String: JSON] {
        viewerOf[session].flatMap { views[$0]?.projection } ?? [:]
    }

    /// What `viewer`'s subscribers hold beyond the shared document; nil when none is subscribed.
    func projection(of viewer: Viewer) -> [String: JSON]? {
        views[viewer]?.projection
    }

    /// The viewer `session` subscribed as, if it did.
    func viewer(of session: SessionHandle) -> Viewer? {
        viewerOf[session]
    }

    /// Every subscribed viewer.
    var viewers: [Viewer] { Array(views.keys) }

    /// After a turn: the projection of every subscribed viewer now (`project` runs once per
    /// viewer, whatever their number of connections; nil: unchanged), and the operations of
    /// those that changed.
    mutating func update(_ project: (Viewer) -> [String: JSON]?) -> [Viewer: [PatchOperation]] {
        var changes: [Viewer: [PatchOperation]] = [:]
        var changed: [(Viewer, [String: JSON])] = []
        for (viewer, view) in views {
            guard let now = project(viewer) else { continue }
            let operations = Projection.changes(from: view.projection, to: now)
            guard !operations.isEmpty else { continue }
            changes[viewer] = operations
            changed.append((viewer, now))
        }
        // After the loop: writing while iterating would copy the whole dictionary.
        for (viewer, projection) in changed { views[viewer]!.projection = projection }
        return changes
    }

    /// The deliveries of one version step: `shared` for subscribers whose projection did not
    /// change, and one frame per distinct list of projection operations (encoded once) for the
    /// others.
    func deliveries(of shared: PatchFrame, changes: [Viewer: [PatchOperation]], to subscribers: [SessionHandle],
                    compressAbove: Int?) -> [RoomDelivery] {
        guard !changes.isEmpty else { return [.patch(shared, to: subscribers)] }
        var groupOfOperations: [[PatchOperation]: Int] = [:]
        var groups: [(frame: PatchFrame, sessions: [SessionHandle])] = []
        var plain: [SessionHandle] = []
        for (viewer, view) in views {
            guard let operations = changes[viewer] else {
                plain += view.sessions
                continue
            }
            if let group = groupOfOperations[operations] {
                groups[group].sessions += view.sessions
            } else {
                groupOfOperations[operations] = groups.count
                groups.append((PatchFrame(extending: shared, with: operations, compressAbove: compressAbove), view.sessions))
            }
        }
        var deliveries: [RoomDelivery] = plain.isEmpty ? [] : [.patch(shared, to: plain)]
        for group in groups { deliveries.append(.patch(group.frame, to: group.sessions)) }
        return deliveries
    }
}
