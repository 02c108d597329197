import DequeModule
import TetherProtocol
import TetherTransport

/// One connection's send queue, on the hub's queue. Bounded in bytes: when a room's patches
/// would overflow it, they are dropped and the room is asked for a fresh snapshot, so a slow
/// client costs a bounded amount of memory and never slows the room.
///
/// When the socket is writable, consecutive patches of one room go out as one merged patch
/// (`from` of the first, `version` of the last, operations concatenated), and everything queued
/// goes out packed into one write: when the client is behind, one write carries many versions,
/// while at low load each patch still goes out alone, at once.
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
        case .snapshot(let room, _, _, _):
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
        /// Writes issued (each carries one or more frames).
        var writes = 0
        var compressedFrames = 0
    }

    /// Bytes packed into one write: past this a write goes out and the next batch starts (if
    /// the socket took everything). Big enough that a flush of a client that fell behind is a
    /// handful of writes, small enough that a batch costs little to copy.
    static let packedWriteBytes = 64 << 10

    /// Writes queued messages while the socket takes them, packing them into one write per
    /// batch (`PackedFrames`): one `send()` for everything a flush finds queued, instead of one
    /// per frame. Asks for another writable callback when some remain. `frames` and `scratch`
    /// are the hub's reused buffers (the packed write, and merged patches being built).
    ///
    /// On a connection that negotiated compression, a message compressed once by its room goes
    /// out compressed (the same bytes for every such subscriber), and such a patch is not merged
    /// with its neighbours: merging would mean compressing per connection. Every other frame goes
    /// to such a connection RSV1-marked too, stored uncompressed (`PackedFrames.appendUncompressed`).
    mutating func flush(to connection: any ClientConnection, frames: inout PackedFrames, scratch: inout [UInt8],
                        now: ContinuousClock.Instant) -> WriteStats {
        var stats = WriteStats()
        let compressing = connection.usesCompression
        while !queue.isEmpty, !connection.isChoked {
            frames.removeAll()
            var taken = 0
            var batch = WriteStats()
            while taken < queue.count, frames.byteCount < Self.packedWriteBytes {
                switch queue[taken] {
                case .control(let bytes):
                    frames.appendUncompressed(bytes, deflateNegotiated: compressing)
                    taken += 1
                case .snapshot(_, _, let bytes, let compressed):
                    if compressing, let compressed {
                        frames.appendText(compressed, compressed: true)
                        batch.compressedFrames += 1
                    } else {
                        frames.appendUncompressed(bytes, deflateNegotiated: compressing)
                    }
                    taken += 1
                case .patch(let first):
                    if compressing, let compressed = first.compressedFrame {
                        frames.appendText(compressed, compressed: true)
                        batch.compressedFrames += 1
                        batch.patchVersions += first.version - first.from
                        taken += 1
                        continue
                    }
                    var last = first
                    var run = 1
                    var size = first.operations.count
                    while taken + run < queue.count, case .patch(let next) = queue[taken + run], next.room == first.room,
                          next.epoch == first.epoch, next.from == last.version,
                          size + next.operations.count <= maxMergedBytes,
                          !(compressing && next.compressedFrame != nil) {
                        last = next
                        size += next.operations.count
                        run += 1
                    }
                    if run == 1 {
                        frames.appendUncompressed(first.frame, deflateNegotiated: compressing)
                    } else {
                        let patches = queue[taken..<(taken + run)].lazy.compactMap { message -> PatchFrame? in
                            if case .patch(let patch) = message { patch } else { nil }
                        }
                        PatchFrame.writeMerged(patches, from: first.from, to: last.version, into: &scratch)
                        frames.appendUncompressed(scratch, deflateNegotiated: compressing)
                        batch.mergedFrames += 1
                    }
                    batch.patchVersions += last.version - first.from
                    taken += run
                }
            }
            guard connection.send(frames) else { break }  // closing: the transport drops the rest
            for _ in 0..<taken { queuedBytes -= queue.removeFirst().byteCount }
            stats.frames += frames.frameCount
            stats.bytes += frames.byteCount
            stats.patchVersions += batch.patchVersions
            stats.mergedFrames += batch.mergedFrames
            stats.compressedFrames += batch.compressedFrames
            stats.writes += 1
            waitingSince = now
        }
        if queue.isEmpty { waitingSince = nil } else { connection.requestWritable() }
        return stats
    }
}
