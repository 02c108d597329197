import Foundation
import Synchronization
import TetherJSON

/// Turns what happens in rooms into deliveries for the endpoints that want them. A room asks it
/// on every version step, so the question "does anyone want this?" costs one lock and a scan of
/// the endpoints (none: nothing encoded, nothing written).
final class WebhookRecorder: Sendable {
    private let endpoints: Mutex<[WebhookEndpoint]>
    let outbox: any WebhookOutbox
    /// Tells the deliverer something was recorded.
    private let onRecord = Mutex<(@Sendable () -> Void)?>(nil)

    init(endpoints: [WebhookEndpoint], outbox: any WebhookOutbox) {
        self.endpoints = Mutex(endpoints)
        self.outbox = outbox
    }

    func wakeOnRecord(_ wake: @escaping @Sendable () -> Void) { onRecord.withLock { $0 = wake } }

    private func wake() { onRecord.withLock { $0 }?() }

    var current: [WebhookEndpoint] { endpoints.withLock { $0 } }

    /// Reload: events recorded from now on go to these endpoints.
    func reconfigure(_ endpoints: [WebhookEndpoint]) { self.endpoints.withLock { $0 = endpoints } }

    /// The deliveries of an event of `type` in `room`; `make` runs only if an endpoint wants it.
    func deliveries(_ type: WebhookEventType, room: String, make: (_ withArguments: Bool) -> WebhookEvent) -> [WebhookDelivery] {
        let wanting = endpoints.withLock { endpoints in endpoints.isEmpty ? [] : endpoints.filter { $0.wants(type, room: room) } }
        guard !wanting.isEmpty else { return [] }
        // Arguments only for endpoints that asked for them: two events, one id (the same happening).
        var plain: WebhookEvent?, full: WebhookEvent?
        return wanting.map { endpoint in
            let event: WebhookEvent
            if endpoint.arguments {
                event = full ?? make(true)
                full = event
            } else {
                event = plain ?? make(false)
                plain = event
            }
            return WebhookDelivery(endpoint: endpoint.name, event: event)
        }
    }

    /// Records an event that is not part of a version step (a room made, deleted, a member).
    func record(_ type: WebhookEventType, room: String, make: (_ withArguments: Bool) -> WebhookEvent) {
        let deliveries = deliveries(type, room: room, make: make)
        guard !deliveries.isEmpty else { return }
        outbox.add(deliveries, now: Int(Date().timeIntervalSince1970))
        wake()
    }

    /// A step's deliveries were handed to the log: the deliverer may look for them.
    func recorded() { wake() }
}
