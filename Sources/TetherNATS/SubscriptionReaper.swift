import CNATS
import Foundation
import Synchronization

/// Destroys released subscriptions once the connection's reader can no longer be using them.
///
/// libnats 3.4.1 (Debian 12's) looks a subscription up when a message for it arrives, drops the
/// lock, then uses it (nats.c issue 637, fixed in 3.6): a subscription destroyed in between is
/// freed under the reader. It crashed tetherd in the fault-injection test when an owner lost its
/// room while a forwarded action was arriving. So a released subscription is unsubscribed at
/// once (nothing more is routed to it) and destroyed only after a flush (PING/PONG) on its
/// connection: the reader handles its input in order, so once the PONG is read it is past every
/// message that came before the UNSUB. A closed connection has joined its reader: no flush needed.
enum SubscriptionReaper {
    private struct Retired: @unchecked Sendable {
        // @unchecked: the C subscription is thread-safe and keeps its connection alive.
        let subscription: OpaquePointer
        let connection: OpaquePointer
    }

    private struct State {
        var waiting: [Retired] = []
        var running = false
    }

    private static let state = Mutex(State())

    /// Subscriptions released but not yet destroyed.
    static var waiting: Int { state.withLock { $0.waiting.count + ($0.running ? 1 : 0) } }

    /// Unsubscribes (for a JetStream consumer this deletes it: an API request) and destroys later,
    /// on the reaper's thread. Never blocks the caller.
    static func retire(_ subscription: OpaquePointer, on connection: OpaquePointer) {
        let start = state.withLock { state -> Bool in
            state.waiting.append(Retired(subscription: subscription, connection: connection))
            defer { state.running = true }
            return !state.running
        }
        if start { Blocking.start(reap) }
    }

    /// Runs until nothing waits: unsubscribes a batch, flushes each of its connections once,
    /// destroys what is safe, retries the rest (connections that are reconnecting) shortly after.
    private static func reap() {
        var unsafe: [Retired] = []
        while true {
            let batch = state.withLock { state -> [Retired] in
                let batch = state.waiting
                state.waiting.removeAll()
                if batch.isEmpty && unsafe.isEmpty { state.running = false }
                return batch
            }
            if batch.isEmpty && unsafe.isEmpty { return }
            for retired in batch { _ = natsSubscription_Unsubscribe(retired.subscription) }
            let all = unsafe + batch
            unsafe = []
            var flushed: [OpaquePointer: Bool] = [:]
            for retired in all {
                let safe = flushed[retired.connection] ?? {
                    let safe = natsConnection_IsClosed(retired.connection)
                        || natsConnection_FlushTimeout(retired.connection, 2_000) == NATS_OK
                    flushed[retired.connection] = safe
                    return safe
                }()
                if safe { natsSubscription_Destroy(retired.subscription) } else { unsafe.append(retired) }
            }
            if !unsafe.isEmpty { usleep(250_000) }
        }
    }
}
