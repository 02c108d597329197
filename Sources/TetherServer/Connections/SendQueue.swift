import DequeModule
import TetherProtocol

/// One connection's send queue, on the hub's queue. Bounded in bytes: when a room's patches
/// would overflow it, they are dropped and the room is asked for a fresh snapshot, so a slow
/// client costs a bounded amount of memory and never slows the room.
///
/// When the socket is writable, consecutive patches of one room go out as one merged patch
/// (`from` of the first, `version` of the last, operations concatenated): one write carries
/// many versions when the client is behind, while at low load each patch still goes out alone.
struct SendQueue {
    private var queue: Deque<OutboundMessage> = []
    private(set) var queuedBytes = 0
    /// Rooms whose patches are dropped until their snapshot arrives (after an overflow).
    private(set) var awaitingSnapshot: Set<String> = []
    /// Since when messages have waited with no write going out (nil while nothing waits). A
    /// client stuck longer than a timeout is closed; dropping messages is not progress.
    private(set) var waitingSince: ContinuousClock.Instant?

    let limitBytes: Int
    let maxMergedBytes: Int

    init(limitBytes: Int, maxMergedBytes: Int) {
        self.limitBytes = limitBytes
        self.maxMergedBytes = maxMergedBytes
    }

    var isEmpty: Bool { queue.isEmpty }
    var count: Int { queue.count }

    enum EnqueueResult: Equatable {
        case queued
        /// A patch for a room that is waiting for its snapshot.
        case dropped
        /// The room's queued patches were dropped; ask the room for a snapshot.
        case overflowed(room: String)
    }

    mutating func enqueue(_ message: OutboundMessage, now: ContinuousClock.Instant) -> EnqueueResult {
        if waitingSince == nil { waitingSince = now }
        switch message {
        case .control:
            break
        case .snapshot(let room, _, _):
            // A snapshot supersedes whatever of its room is still queued.
            removeMessages(of: room)
            awaitingSnapshot.remove(room)
        case .patch(let patch):
            if awaitingSnapshot.contains(patch.room) { return .dropped }
            if queuedBytes + patch.byteCount > limitBytes {
                removeMessages(of: patch.room)
                awaitingSnapshot.insert(patch.room)
                return .overflowed(room: patch.room)
            }
        }
        queue.append(message)
        queuedBytes += message.byteCount
        return .queued
    }

    /// Drops everything queued for `room` (after a leave, a rejoin or an overflow).
    mutating func removeMessages(of room: String) {
        guard queue.contains(where: { $0.room == room }) else { return }
        queue.removeAll { message in
            guard message.room == room else { return false }
            queuedBytes -= message.byteCount
            return true
        }
    }

    mutating func forget(room: String) {
        removeMessages(of: room)
        awaitingSnapshot.remove(room)
    }

    struct WriteStats {
        var frames = 0
        var bytes = 0
        /// Version steps delivered (a merged patch of versions 3...7 delivers 4).
        var patchVersions = 0
        var mergedFrames = 0
    }

    /// Writes queued messages while the socket takes them; asks for another writable callback
    /// when some remain. `scratch` is the socket thread's buffer for building merged patches.
    mutating func flush(to connection: any ClientConnection, scratch: inout [UInt8], now: ContinuousClock.Instant) -> WriteStats {
        var stats = WriteStats()
        while let head = queue.first, !connection.isChoked {
            let taken: Int
            let ok: Bool
            switch head {
            case .control(let bytes), .snapshot(_, _, let bytes):
                ok = bytes.withUnsafeBytes { connection.sendText($0) }
                taken = 1
                stats.bytes += bytes.count
            case .patch(let first):
                var last = first
                var run = 1
                var size = first.operations.count
                while run < queue.count, case .patch(let next) = queue[run], next.room == first.room,
                      next.epoch == first.epoch, next.from == last.version,
                      size + next.operations.count <= maxMergedBytes {
                    last = next
                    size += next.operations.count
                    run += 1
                }
                if run == 1 {
                    ok = first.frame.withUnsafeBytes { connection.sendText($0) }
                    stats.bytes += first.frame.count
                } else {
                    let patches = queue.prefix(run).lazy.compactMap { message -> PatchFrame? in
                        if case .patch(let patch) = message { patch } else { nil }
                    }
                    PatchFrame.writeMerged(patches, from: first.from, to: last.version, into: &scratch)
                    ok = scratch.withUnsafeBytes { connection.sendText($0) }
                    stats.bytes += scratch.count
                    stats.mergedFrames += 1
                }
                stats.patchVersions += last.version - first.from
                taken = run
            }
            guard ok else { break }  // closing: the transport drops the rest
            for _ in 0..<taken { queuedBytes -= queue.removeFirst().byteCount }
            stats.frames += 1
            waitingSince = now
        }
        if queue.isEmpty { waitingSince = nil } else { connection.requestWritable() }
        return stats
    }
}
