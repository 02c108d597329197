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
}

/// How an action went: applied (its effects are in `version` or earlier), or refused.
public enum ActionOutcome: Sendable, Equatable {
    case applied(version: Int)
    case failed(ProtocolError)
}

extension RoomDelivery {
    var isRemoteReply: Bool {
        if case .reply(_, .remote) = self { true } else { false }
    }
}

/// Who is waiting for an action's outcome.
public enum ActionReplyTarget: Sendable {
    /// A session of this server; the reply carries the client's `id` and the room's name.
    /// `received`: when this server took the action (a cluster answers within a lease of it).
    case session(SessionHandle, id: Int, room: String, received: ContinuousClock.Instant)
    /// Another cluster node that forwarded the action of `viewer` (who sent it there).
    case remote(viewer: Viewer, respond: @Sendable (ActionOutcome) -> Void)

    /// Who sent the action: the ViewModel's action handler receives them.
    var viewer: Viewer {
        switch self {
        case .session(let session, _, _, _): session.viewer
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
/// in the order produced (after the room's log released it); every implementation keeps that
/// order.
public protocol RoomOutput: Sendable {
    func deliver(_ deliveries: [RoomDelivery])
}

/// Hands output to the hubs on their queues: with several socket shards, each shard gets one
/// batch with what is for its own sessions (a patch once, with its share of the subscribers),
/// in the order produced. The answer to another node's forwarded action leaves from here, on
/// the room's executor: no socket thread stands between a room and the node waiting for it.
struct HubOutput: RoomOutput {
    let shards: HubShards

    func deliver(_ produced: [RoomDelivery]) {
        let deliveries = produced.contains(where: \.isRemoteReply) ? Self.answerRemoteReplies(produced) : produced
        let count = shards.count
        guard count > 1 else {
            guard !deliveries.isEmpty, let hub = shards.hub(0) else { return }
            hub.queue.execute { hub.deliver(deliveries) }
            return
        }
        var perShard = [[RoomDelivery]](repeating: [], count: count)
        for delivery in deliveries {
            switch delivery {
            case .patch(let patch, let subscribers):
                for (shard, group) in Self.split(subscribers, into: count) { perShard[shard].append(.patch(patch, to: group)) }
            case .message(_, let handle):
                perShard[handle.session.shard].append(delivery)
            case .presence(let frame, let room, let listeners):
                for (shard, group) in Self.split(listeners, into: count) { perShard[shard].append(.presence(frame, room: room, to: group)) }
            case .reply(_, .session(let handle, _, _, _)):
                perShard[handle.session.shard].append(delivery)
            case .reply(_, .remote):
                break  // answered above
            }
        }
        for (shard, batch) in perShard.enumerated() where !batch.isEmpty {
            guard let hub = shards.hub(shard) else { continue }
            hub.queue.execute { hub.deliver(batch) }
        }
    }

    /// Answers the remote replies among `deliveries`; returns the rest, in order.
    private static func answerRemoteReplies(_ deliveries: [RoomDelivery]) -> [RoomDelivery] {
        deliveries.filter { delivery in
            guard case .reply(let outcome, .remote(_, let respond)) = delivery else { return true }
            respond(outcome)
            return false
        }
    }

    /// The handles grouped by shard (only shards with some).
    private static func split(_ handles: [SessionHandle], into count: Int) -> [(Int, [SessionHandle])] {
        var groups = [[SessionHandle]](repeating: [], count: count)
        for handle in handles { groups[handle.session.shard].append(handle) }
        return groups.enumerated().compactMap { $0.element.isEmpty ? nil : ($0.offset, $0.element) }
    }
}

