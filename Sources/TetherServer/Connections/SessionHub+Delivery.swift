import Logging
import TetherJSON
import TetherProtocol
import TetherState
import TetherTransport

/// What rooms deliver, queued for the sessions they are for, and flushed once per batch.
extension SessionHub {
    // MARK: From rooms

    /// What rooms delivered, in their order (on the hub's queue).
    func deliver(_ deliveries: [RoomDelivery]) {
        for delivery in deliveries {
            switch delivery {
            case .patch(let patch, let subscribers):
                for handle in subscribers { send(.patch(patch), to: handle) }
                metrics.fanOutLatency.record(.now - patch.createdAt)
            case .message(let message, let handle):
                send(message, to: handle)
            case .presence(let frame, let room, let listeners):
                for handle in listeners where !handle.session.isClosed && handle.session.joined[room] != nil {
                    enqueue(.control(frame), for: handle.session, fromRoom: true)
                }
            case .reply(let outcome, .session(let handle, let id, let room, _)):
                guard !handle.session.isClosed else { continue }
                if configuration.withholdsAcksForTests, case .applied = outcome { continue }
                enqueue(.control(outcome.frame(id: id, room: room)), for: handle.session, fromRoom: true)
            case .reply(_, .remote):
                assertionFailure("HubOutput answers another node's forwarded action itself")
            }
        }
    }

    /// Queues a room's message for a session, unless it closed or left that room meanwhile.
    func send(_ message: OutboundMessage, to handle: SessionHandle) {
        let session = handle.session
        guard !session.isClosed else { return }
        if let room = message.room, session.joined[room] == nil { return }
        enqueue(message, for: session, fromRoom: true)
    }

    /// Queues a message. Messages from rooms go out when the current batch of queued work has
    /// run (`didRunQueuedWork`), written at once on a connection with nothing buffered: at low
    /// load that is one frame per patch without waiting for a writable callback, and when the
    /// hub is behind, a batch holds many patches per connection and they leave merged. (Asking
    /// lws for a writable callback costs two epoll_ctl calls per frame; docs/PERFORMANCE.md
    /// has the figures.) Answers to a connection's own requests (hello, errors) wait for its
    /// writable callback, as lws expects.
    func enqueue(_ message: OutboundMessage, for session: Session, fromRoom: Bool = false) {
        let wasEmpty = session.sendQueue.isEmpty
        switch session.sendQueue.enqueue(message, now: now) {
        case .queued:
            guard wasEmpty else { break }
            if fromRoom {
                if !session.isFlushScheduled {
                    session.isFlushScheduled = true
                    flushAfterBatch.append(session)
                }
            } else {
                session.connection.requestWritable()
            }
        case .dropped:
            break
        case .overflowed(let name):
            metrics.sendQueueOverflows.increment()
            shards.activity.withLock { $0.resnapshots += 1 }
            logger.debug("connection \(session.id): send queue full, room \(name) will resend a snapshot")
            let handle = SessionHandle(session: session)
            session.joined[name]?.resync(handle)
        }
    }

    /// A batch of queued work has run: flush what rooms delivered during it.
    public func didRunQueuedWork() {
        let sessions = flushAfterBatch
        flushAfterBatch.removeAll(keepingCapacity: true)
        for session in sessions {
            session.isFlushScheduled = false
            guard !session.isClosed, !session.sendQueue.isEmpty else { continue }
            if session.connection.isChoked {
                session.connection.requestWritable()
            } else {
                flush(session)
            }
        }
    }

    /// A deleted room's subscribers of this shard: their stream of it ends with `frame`.
    func endStream(of room: any RoomEndpoint, frame: [UInt8]) {
        let name = room.name
        for session in sessions.values where session.joined[name] === room {
            session.joined[name] = nil
            session.authorizedUntil[name] = nil
            session.viewers[name] = nil
            session.readOnly[name] = nil
            session.sendQueue.forget(room: name)
            enqueue(.control(frame), for: session)
        }
    }
}
