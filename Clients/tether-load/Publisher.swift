import TetherTransport

/// One publisher connection. Loop-thread confined, like `PublisherShard`.
final class Publisher: WebSocketClientDelegate, @unchecked Sendable {
    unowned let shard: PublisherShard
    let index: Int
    var connection: WebSocketConnection?
    var ready = false
    var nextID = 1
    /// Action id -> (room, send time) until its ack arrives.
    var outstanding: [Int: (room: Int, sentAt: Int)] = [:]
    /// Frames waiting for a writable socket (only when choked).
    var queue: [[UInt8]] = []

    init(shard: PublisherShard, index: Int) {
        self.shard = shard
        self.index = index
        outstanding.reserveCapacity(4096)
    }

    func clientConnected(_ connection: WebSocketConnection) { self.connection = connection }
    func clientConnectFailed(_ connection: WebSocketConnection, reason: String) { shard.connectFailed(self, reason: reason) }
    func connectionClosed(_ connection: WebSocketConnection, code: UInt16?) { shard.closed(self, code: code) }
    func connection(_ connection: WebSocketConnection, receivedText payload: UnsafeRawBufferPointer) { shard.received(payload, from: self) }
    func connectionWritable(_ connection: WebSocketConnection) {
        var sent = 0
        for frame in queue {
            guard !connection.isChoked else { break }
            frame.withUnsafeBytes { _ = connection.sendText($0) }
            sent += 1
        }
        queue.removeFirst(sent)
        if !queue.isEmpty { connection.requestWritable() }
    }
}
