import Dispatch
import TetherTransport

/// Written on a loop thread before the semaphore is signalled, read after the wait.
private final class Handoff<T>: @unchecked Sendable {
    var value: T?
}

/// Runs `body` on `client`'s loop thread and waits for its result (nil if the loop is gone or
/// does not answer within 15 s). The main thread reads a shard's state only this way: the shard
/// itself is confined to its loop thread.
func onLoop<T>(_ client: WebSocketClient, _ body: @escaping @Sendable () -> T) -> T? {
    let handoff = Handoff<T>()
    let done = DispatchSemaphore(value: 0)
    guard client.execute({ handoff.value = body(); done.signal() }) else { return nil }
    guard done.wait(timeout: .now() + 15) == .success else { return nil }
    return handoff.value
}
