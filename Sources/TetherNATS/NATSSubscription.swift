import CNATS

/// A subscription made by `NATSConnection.subscribe`. Releasing it unsubscribes, like
/// `unsubscribe()`. Its handler runs on the subscription's delivery thread (or the shared pool
/// with `globalMessageDelivery`), one message at a time; after `unsubscribe()` returns, a
/// message already being delivered may still finish.
public final class NATSSubscription: @unchecked Sendable {
    // @unchecked: the C subscription is thread-safe.
    let pointer: OpaquePointer
    /// The C connection (kept alive by the C subscription), for `SubscriptionReaper`.
    private let connection: OpaquePointer
    public let subject: String

    /// What a delivery thread calls per message.
    enum Delivery: Sendable {
        /// The message copied into a `NATSMessage` (answerable through the connection, which a
        /// subscription does not keep alive).
        case message(@Sendable (NATSMessage) -> Void, WeakConnection)
        /// The C message itself, valid only during the call (internal users copy what they need).
        case raw(@Sendable (OpaquePointer) -> Void)
    }

    private init(pointer: OpaquePointer, connection: OpaquePointer, subject: String) {
        self.pointer = pointer
        self.connection = connection
        self.subject = subject
    }

    static func subscribe(_ connection: OpaquePointer, subject: String, queueGroup: String?, delivery: Delivery) throws(NATSError) -> NATSSubscription {
        let box = DeliveryBox(delivery)
        let closure = Unmanaged.passRetained(box).toOpaque()
        let handler: natsMsgHandler = { _, _, message, closure in
            guard let message else { return }
            Unmanaged<DeliveryBox>.fromOpaque(closure!).takeUnretainedValue().deliver(message)
            natsMsg_Destroy(message)
        }
        var subscriptionPointer: OpaquePointer?
        let status = if let queueGroup {
            natsConnection_QueueSubscribe(&subscriptionPointer, connection, subject, queueGroup, handler, closure)
        } else {
            natsConnection_Subscribe(&subscriptionPointer, connection, subject, handler, closure)
        }
        guard status == NATS_OK, let subscription = subscriptionPointer else {
            Unmanaged<DeliveryBox>.fromOpaque(closure).release()
            throw .library("subscribe(\(subject))", status)
        }
        // The box lives until the delivery thread is done with the subscription.
        let completeStatus = natsSubscription_SetOnCompleteCB(subscription, { closure in
            Unmanaged<DeliveryBox>.fromOpaque(closure!).release()
        }, closure)
        if completeStatus != NATS_OK {
            // Already closed (the connection closed meanwhile): its delivery thread may still be
            // finishing a message, so the box is left alive rather than freed under it.
            _ = Unmanaged<DeliveryBox>.fromOpaque(closure).retain()
        }
        return NATSSubscription(pointer: subscription, connection: connection, subject: subject)
    }

    /// Stops the subscription (non-blocking: sends UNSUB).
    public func unsubscribe() {
        _ = natsSubscription_Unsubscribe(pointer)
    }

    public var isValid: Bool { natsSubscription_IsValid(pointer) }

    /// Messages dropped because the handler fell too far behind (slow consumer).
    public var droppedCount: Int64 {
        var dropped: Int64 = 0
        _ = natsSubscription_GetDropped(pointer, &dropped)
        return dropped
    }

    deinit {
        SubscriptionReaper.retire(pointer, on: connection)
    }
}

private final class DeliveryBox: Sendable {
    let delivery: NATSSubscription.Delivery
    init(_ delivery: NATSSubscription.Delivery) { self.delivery = delivery }

    func deliver(_ message: OpaquePointer) {
        switch delivery {
        case .message(let handler, let weak): handler(NATSMessage(copying: message, connection: weak.connection))
        case .raw(let handler): handler(message)
        }
    }
}

struct WeakConnection: Sendable {
    weak var connection: NATSConnection?
}
