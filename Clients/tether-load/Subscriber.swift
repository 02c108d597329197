import TetherTransport

/// One subscriber connection and its view of its room's stream. Loop-thread confined (its
/// shard's service thread), like everything in `SubscriberShard`.
final class Subscriber: WebSocketClientDelegate, @unchecked Sendable {
    enum Phase { case idle, connecting, joining, live, closing, failed }

    unowned let shard: SubscriberShard
    let room: Int
    let url: String
    /// The loopback address its socket is bound to (`--source-addresses`), if any.
    let sourceAddress: String?
    var phase = Phase.idle
    var connection: WebSocketConnection?
    /// The stream position: encoded epoch and last version seen (-1: no snapshot yet).
    var epoch: [UInt8] = []
    var version = -1
    /// Next expected sequence number per publisher.
    var nextSequence: [Int]
    var hasJoinedOnce = false
    /// The join in flight carried `since` (a resume).
    var resuming = false
    var connectStartedAt = 0
    /// When the last close we did not ask for happened, and retries since (--expect-restart).
    var closedAt = 0
    var retries = 0
    /// Holds one of its shard's reconnect slots (--expect-restart).
    var isReconnecting = false

    init(shard: SubscriberShard, room: Int, url: String, publishers: Int, sourceAddress: String? = nil) {
        self.shard = shard
        self.room = room
        self.url = url
        self.sourceAddress = sourceAddress
        self.nextSequence = Array(repeating: 0, count: max(1, publishers))
    }

    func clientConnected(_ connection: WebSocketConnection) { shard.connected(self, connection) }
    func clientConnectFailed(_ connection: WebSocketConnection, reason: String) { shard.connectFailed(self, reason: reason) }
    func connectionClosed(_ connection: WebSocketConnection, code: UInt16?) { shard.closed(self, code: code) }
    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) { shard.received(payload, for: self) }
    func connection(_ connection: WebSocketConnection, receivedBinary payload: UnsafeRawBufferPointer) {
        shard.violation("binary frame received")
    }
    func connectionWritable(_ connection: WebSocketConnection) {}
}
