import Foundation
import TetherJSON
import TetherProtocol
import TetherState

/// What a room's subscribers on this node ask of it, written once for a single node's `Room`
/// and a cluster node's `ClusteredRoom`: join (a snapshot or the patches missed, presence, the
/// ack), leave, presence updates and their window, resync after an overflow. Both keep their
/// subscribers in `RoomFollowers` and follow committed version steps: the owner's own on one
/// node (released once `LocalRoomLog` made them durable), the replica's on a cluster node.
///
/// What differs is supplied by the room: where the document comes from (the ViewModel, or the
/// replica), a new viewer's projection (the ViewModel's; on a cluster node the owner sends it),
/// the reaction to members listed or unlisted (the ViewModel's turn on one node; on a cluster
/// the owner hears of them from `ClusterPresence`), viewers coming and going (a cluster node
/// announces them to the owner) and how deliveries leave (after the log on one node, at once
/// on a cluster node, whose replica applied only what the log holds).
protocol RoomFront: Actor, RoomEndpoint {
    /// Where `member.*` events go (nil: no webhooks).
    var webhookRecorder: WebhookRecorder? { get }
    var followers: RoomFollowers { get set }
    /// False once the room stopped: a presence window ending then sends nothing.
    var isServing: Bool { get }
    func frontDocument() -> JSON
    func frontProjection(for viewer: Viewer) -> [String: JSON]
    /// After a change of members listed here: the room's reaction, sent after the change.
    func membersChanged(_ outcome: RoomFollowers.PresenceOutcome) -> [RoomDelivery]
    /// A viewer came to this node's sessions, or its last session here left.
    func viewersChanged(came: Viewer?, left: Viewer?)
    func emit(_ deliveries: [RoomDelivery])
    nonisolated func execute(_ work: @escaping @Sendable (isolated Self) -> Void)
}

extension RoomFront {
    nonisolated func updatePresence(_ session: SessionHandle, data: JSON, id: Int?) {
        execute { $0.frontUpdatePresence(session, data: data, id: id) }
    }

    nonisolated func resync(_ session: SessionHandle) {
        execute { room in
            guard room.followers.subscribers.contains(session), room.followers.hasEpoch else { return }
            room.emit([room.followers.snapshot(for: session, document: { room.frontDocument() })])
        }
    }

    /// Subscribes `session`: first a snapshot, or, when `since` names a version of this epoch
    /// still in the history, the patches after it (an empty patch when nothing changed). With
    /// `presence` (in a room that keeps it), the session is listed and a presence snapshot
    /// follows. With an `id`, an ack at the room's version comes last.
    func frontJoin(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence join: PresenceJoin?) {
        let previous = followers.viewerViews?.viewer(of: session)
        let isNew = followers.viewerViews.map { $0.projection(of: session.viewer) == nil } ?? false
        var deliveries = followers.add(session, since: since, project: { frontProjection(for: $0) }, document: { frontDocument() })
        if let views = followers.viewerViews {
            let gone = previous.flatMap { $0 != session.viewer && views.projection(of: $0) == nil ? $0 : nil }
            if isNew || gone != nil { viewersChanged(came: isNew ? session.viewer : nil, left: gone) }
        }
        let presence = followers.joinPresence(session, join, windowEnded: presenceWindowEnds)
        deliveries += reacted(to: presence)
        recordMembers(presence, viewer: session.viewer.id)
        emit(deliveries + followers.joinAck(id, to: session))
    }

    /// `session` leaves: its stream stops and its member, if listed, is unlisted.
    func frontLeave(_ session: SessionHandle) {
        let viewer = followers.viewerViews?.viewer(of: session)
        guard followers.remove(session) else { return }
        if let viewer, followers.viewerViews?.projection(of: viewer) == nil { viewersChanged(came: nil, left: viewer) }
        let presence = followers.leavePresence(session, windowEnded: presenceWindowEnds)
        recordMembers(presence, viewer: session.viewer.id)
        let deliveries = reacted(to: presence)
        if !deliveries.isEmpty { emit(deliveries) }
    }

    /// `member.joined` and `member.left` webhooks: from the node the member is on.
    private func recordMembers(_ outcome: RoomFollowers.PresenceOutcome, viewer: String) {
        guard let webhooks = webhookRecorder else { return }
        let (room, kind) = (name, self.kind.name)
        if let left = outcome.left {
            webhooks.record(.memberLeft, room: room) { _ in
                WebhookEvent.member(joined: false, room: room, kind: kind, member: left, viewer: viewer, at: Date().timeIntervalSince1970)
            }
        }
        if let listed = outcome.listed {
            webhooks.record(.memberJoined, room: room) { _ in
                WebhookEvent.member(joined: true, room: room, kind: kind, member: listed.id, viewer: listed.user, at: Date().timeIntervalSince1970)
            }
        }
    }

    /// A presence update: every listener (the sender too) gets the change, then the sender its
    /// ack (which, with a window, comes first: the change goes out when the window ends).
    private func frontUpdatePresence(_ session: SessionHandle, data: JSON, id: Int?) {
        if let refusal = followers.presenceRefusal(session, id: id) { return emit([refusal]) }
        let outcome = followers.updatePresence(session, data: data, windowEnded: presenceWindowEnds)
        emit(reacted(to: outcome) + followers.presenceAck(id, to: session))
    }

    /// Members changed elsewhere (another cluster node's): this node's listeners hear of it.
    func presenceChangedElsewhere() {
        guard isServing else { return }
        let deliveries = followers.presenceChanged(windowEnded: presenceWindowEnds)
        if !deliveries.isEmpty { emit(deliveries) }
    }

    nonisolated var presenceWindowEnds: @Sendable () -> Void {
        { self.execute { $0.presenceWindowEnded() } }
    }

    private func presenceWindowEnded() {
        guard isServing else { return }
        let deliveries = followers.presenceWindowEnded()
        if !deliveries.isEmpty { emit(deliveries) }
    }

    private func reacted(to outcome: RoomFollowers.PresenceOutcome) -> [RoomDelivery] {
        outcome.changedMembers ? outcome.deliveries + membersChanged(outcome) : outcome.deliveries
    }
}
