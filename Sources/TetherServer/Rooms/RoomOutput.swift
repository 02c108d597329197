import TetherJSON
import TetherProtocol
import TetherState

/// What a room produced, and for whom.
public enum RoomDelivery: Sendable {
    /// A version step for these subscribers (the room's list when it was produced).
    case patch(PatchFrame, to: [SessionHandle])
    /// A message for one session: a snapshot, a resumed patch, a join's ack.
    case message(OutboundMessage, to: SessionHandle)
    /// A `presence_patch` frame (encoded once) for the room's presence listeners.
    case presence([UInt8], room: String, to: [SessionHandle])
    /// How an action went, for whoever sent it.
    case reply(ActionOutcome, to: ActionReplyTarget)
    /// On a cluster's owner only, after the patch of `version`: the projections that changed
    /// for viewers of other nodes' sessions, `{node: {viewerID: projection}}`, for the room's log
    /// (Cluster/ClusterViewers.swift).
    case projections(JSON, version: Int)
}

/// How an action went: applied (its effects are in `version` or earlier), or refused.
public enum ActionOutcome: Sendable, Equatable {
    case applied(version: Int)
    case failed(ProtocolError)
}

/// Who is waiting for an action's outcome.
public enum ActionReplyTarget: Sendable {
    /// A session of this server; the reply carries the client's `id` and the room's name.
    case session(SessionHandle, id: Int, room: String)
    /// Another cluster node that forwarded the action of `viewer` (who sent it there).
    case remote(viewer: Viewer, respond: @Sendable (ActionOutcome) -> Void)

    /// Who sent the action: the ViewModel's action handler receives them.
    var viewer: Viewer {
        switch self {
        case .session(let session, _, _): session.viewer
        case .remote(let viewer, _): viewer
        }
    }
}

extension ActionOutcome {
    /// The `ack` or `error` frame for a client's request `id` in `room`.
    func frame(id: Int, room: String) -> [UInt8] {
        switch self {
        case .applied(let version): return ServerMessage.ack(id: id, room: room, version: version).encoded()
        case .failed(var error):
            error.id = id
            error.room = room
            return ServerMessage.error(error).encoded()
        }
    }
}

/// Where a room's output goes: the one narrow way out of a room. Called on the room's executor,
/// in the order produced; every implementation keeps that order. The local one hands output to
/// the hub's queue; the durable one waits for the store first.
public protocol RoomOutput: Sendable {
    func deliver(_ deliveries: [RoomDelivery])
}

/// Hands output to the hub on its queue.
struct HubOutput: RoomOutput {
    let hub: SessionHub

    func deliver(_ deliveries: [RoomDelivery]) {
        let hub = self.hub
        hub.queue.execute { hub.deliver(deliveries) }
    }
}

/// Delivers only once every version committed before it is durable, so no client ever sees a
/// version that a crash could take back.
struct CommittedOutput: RoomOutput {
    let store: RoomStore
    let next: any RoomOutput

    func deliver(_ deliveries: [RoomDelivery]) {
        let next = self.next
        store.afterCommits { next.deliver(deliveries) }
    }
}
