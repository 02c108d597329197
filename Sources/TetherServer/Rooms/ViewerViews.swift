import TetherJSON
import TetherState

/// The per-viewer side of a room whose ViewModel publishes values per viewer
/// (`ViewModelContext.perViewer`): who each subscriber is, and each subscribed viewer's
/// projection as their subscribers hold it. On the room's executor.
///
/// A viewer's document is the shared document plus their projection. The room's version is one
/// counter for everyone: a version step's frame for a viewer is the shared operations followed by
/// the operations of that viewer's projection change, and subscribers whose projection
/// operations are byte for byte the same share one frame (most share the plain shared frame).
struct ViewerViews {
    private struct View {
        var projection: [String: JSON]
        var subscribers: Int
    }

    private var viewerOf: [SessionHandle: Viewer] = [:]
    private var views: [Viewer: View] = [:]

    /// Records `session` (as `session.viewer`); a second join with another token moves it.
    mutating func add(_ session: SessionHandle, host: ViewModelHost) {
        if let previous = viewerOf[session] {
            guard previous != session.viewer else { return }
            remove(session)
        }
        viewerOf[session] = session.viewer
        if views[session.viewer] != nil {
            views[session.viewer]!.subscribers += 1
        } else {
            views[session.viewer] = View(projection: host.projection(for: session.viewer), subscribers: 1)
        }
    }

    mutating func remove(_ session: SessionHandle) {
        guard let viewer = viewerOf.removeValue(forKey: session) else { return }
        views[viewer]!.subscribers -= 1
        if views[viewer]!.subscribers == 0 { views[viewer] = nil }
    }

    /// What `session`'s document holds beyond the shared one.
    func projection(of session: SessionHandle) -> [String: JSON] {
        viewerOf[session].flatMap { views[$0]?.projection } ?? [:]
    }

    /// After a turn: recomputes the projection of every subscribed viewer (once per viewer,
    /// whatever their number of connections) and returns the operations of those that changed.
    mutating func update(host: ViewModelHost) -> [Viewer: [PatchOperation]] {
        var changes: [Viewer: [PatchOperation]] = [:]
        var changed: [(Viewer, [String: JSON])] = []
        for (viewer, view) in views {
            let now = host.projection(for: viewer)
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
        var frameByOperations: [[PatchOperation]: PatchFrame] = [:]
        var frameOfViewer: [Viewer: PatchFrame] = [:]
        for (viewer, operations) in changes {
            if let frame = frameByOperations[operations] {
                frameOfViewer[viewer] = frame
            } else {
                let frame = PatchFrame(extending: shared, with: operations, compressAbove: compressAbove)
                frameByOperations[operations] = frame
                frameOfViewer[viewer] = frame
            }
        }
        var plain: [SessionHandle] = []
        var groups: [ObjectIdentifier: (frame: PatchFrame, sessions: [SessionHandle])] = [:]
        for session in subscribers {
            guard let viewer = viewerOf[session], let frame = frameOfViewer[viewer] else {
                plain.append(session)
                continue
            }
            groups[ObjectIdentifier(frame), default: (frame, [])].sessions.append(session)
        }
        var deliveries: [RoomDelivery] = plain.isEmpty ? [] : [.patch(shared, to: plain)]
        for group in groups.values { deliveries.append(.patch(group.frame, to: group.sessions)) }
        return deliveries
    }
}
