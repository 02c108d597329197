import CLibWebSockets
import Synchronization

/// permessage-deflate (RFC 7692) for messages sent to many connections: each message is
/// compressed on its own, with a fresh compression context ("no context takeover"), so the
/// compressed bytes do not depend on what a connection received before and the same bytes go to
/// every connection that negotiated the extension. A broadcast is compressed once, not once per
/// subscriber.
///
/// Thread-safe: the zlib streams (about 270 KiB each) are pooled, so any thread may compress
/// without allocating a stream per message, and the pool holds at most one per thread that
/// compressed at the same time.
public enum MessageDeflater {
    /// zlib's level: 6 (its default) makes JSON about 10 % smaller than level 1 for about
    /// twice the time; a message is compressed once however many receive it.
    public static let level: Int32 = 6

    /// `message` compressed as one permessage-deflate message (the payload of a frame with
    /// RSV1), or nil when that is not smaller.
    public static func compress(_ message: UnsafeRawBufferPointer) -> [UInt8]? {
        guard message.count > 0 else { return nil }
        let stream = pool.withLock { $0.popLast() } ?? DeflateStream()
        defer { pool.withLock { $0.append(stream) } }
        return stream.compress(message)
    }

    public static func compress(_ message: [UInt8]) -> [UInt8]? {
        message.withUnsafeBytes { compress($0) }
    }

    /// `message` compressed when it has at least `threshold` bytes (the server's
    /// `--compression-min-bytes`; nil: compression is off), else nil.
    public static func compress(_ message: [UInt8], ifAtLeast threshold: Int?) -> [UInt8]? {
        threshold.flatMap { message.count >= $0 ? compress(message) : nil }
    }

    /// The message back from a permessage-deflate payload (for tests and tools), or nil when the
    /// bytes are not a deflate stream. Not for untrusted input of unbounded size.
    public static func decompress(_ payload: [UInt8]) -> [UInt8]? {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            inflateEnd(stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        guard tether_inflate_init(stream) == Z_OK else { return nil }
        // RFC 7692 7.2.2: append the empty stored block's tail the sender removed.
        var input = payload + [0x00, 0x00, 0xff, 0xff]
        var output = [UInt8](repeating: 0, count: max(1024, payload.count * 4))
        var produced = 0
        let ok = input.withUnsafeMutableBufferPointer { inBuffer -> Bool in
            stream.pointee.next_in = inBuffer.baseAddress
            stream.pointee.avail_in = UInt32(inBuffer.count)
            while true {
                if produced == output.count { output += [UInt8](repeating: 0, count: output.count) }
                let status = output.withUnsafeMutableBufferPointer { outBuffer -> Int32 in
                    stream.pointee.next_out = outBuffer.baseAddress! + produced
                    stream.pointee.avail_out = UInt32(outBuffer.count - produced)
                    defer { produced = outBuffer.count - Int(stream.pointee.avail_out) }
                    return inflate(stream, Z_SYNC_FLUSH)
                }
                switch status {
                case Z_STREAM_END: return true
                case Z_OK, Z_BUF_ERROR:
                    if stream.pointee.avail_out > 0 {
                        // Output room left: everything was read (done), or nothing can move (broken).
                        return stream.pointee.avail_in == 0
                    }
                default: return false
                }
            }
        }
        guard ok else { return nil }
        output.removeSubrange(produced...)
        return output
    }

    private static let pool = Mutex<[DeflateStream]>([])
}

/// One zlib deflate stream. zlib's state points back at its `z_stream`, so the struct lives at a
/// fixed address; used by one thread at a time (the pool hands it out).
private final class DeflateStream: @unchecked Sendable {
    private let stream: UnsafeMutablePointer<z_stream>
    private let usable: Bool
    private var output: [UInt8] = []

    init() {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        usable = tether_deflate_init(stream, MessageDeflater.level) == Z_OK
    }

    deinit {
        if usable { deflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    func compress(_ message: UnsafeRawBufferPointer) -> [UInt8]? {
        guard usable, deflateReset(stream) == Z_OK else { return nil }
        // Room for the whole message: compressing to a smaller one is the point; 16 bytes more
        // for the stored blocks zlib falls back to on incompressible data and the sync flush.
        let capacity = message.count + 16
        if output.count < capacity { output = [UInt8](repeating: 0, count: capacity) }
        let produced: Int? = output.withUnsafeMutableBufferPointer { out in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: message.baseAddress!.assumingMemoryBound(to: UInt8.self))
            stream.pointee.avail_in = UInt32(message.count)
            stream.pointee.next_out = out.baseAddress
            stream.pointee.avail_out = UInt32(capacity)
            // A sync flush ends the message on a byte boundary with an empty stored block
            // (00 00 ff ff), which RFC 7692 says to remove.
            let status = deflate(stream, Z_SYNC_FLUSH)
            guard status == Z_OK, stream.pointee.avail_in == 0, stream.pointee.avail_out > 0 else { return nil }
            return capacity - Int(stream.pointee.avail_out)
        }
        guard let produced, produced >= 4, produced - 4 < message.count,
              output[produced - 4] == 0x00, output[produced - 3] == 0x00,
              output[produced - 2] == 0xff, output[produced - 1] == 0xff else { return nil }
        return Array(output[0..<(produced - 4)])
    }
}
