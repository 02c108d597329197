/// What a room produced, and for whom.
public enum RoomDelivery: Sendable {
    /// A version step for these subscribers (the room's list when it was produced).
    case patch(PatchFrame, to: [SessionHandle])
    /// A message for one session: a snapshot, a resumed patch, an ack or an error.
    case message(OutboundMessage, to: SessionHandle)
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
