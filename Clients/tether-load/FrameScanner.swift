import TetherJSON

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One operation of a scanned patch, reduced to what the checks need: the members `i`
/// (publisher), `s` (sequence), `t` (send time, ns) and `r` (run tag) of its `value` object.
/// Each is -1 when absent (an operation some other writer made).
struct ScannedOperation {
    var publisher = -1
    var sequence = -1
    var sentAt = -1
    var run = -1
}

/// Reads the few members tether-load needs from a server frame without building a JSON tree:
/// the message `type`, and for patches `room`, `epoch`, `from`, `version` and the `i`/`s`/`t`/`r`
/// members of each operation's value. Everything else is skipped byte by byte (strings with
/// `memchr`). Member order and whitespace do not matter.
///
/// One scanner per loop thread: it reuses its operation buffer, so scanning allocates nothing.
/// Anything it does not recognise as a well-formed patch (`.other`, `.malformed`) goes to the
/// full decoder (`ServerMessage.decode`), which also classifies real errors.
final class FrameScanner {
    enum Result { case patch, other, malformed }

    /// The operations of the last scanned patch: `operations[0..<operationCount]`.
    private(set) var operations: UnsafeMutablePointer<ScannedOperation>
    private(set) var operationCount = 0
    private var capacity = 64
    private(set) var from = -1
    private(set) var version = -1
    /// Raw (still escaped) byte ranges of `room` and `epoch` in the scanned frame.
    private(set) var room = 0..<0
    private(set) var epoch = 0..<0

    init() {
        operations = .allocate(capacity: capacity)
    }

    deinit {
        operations.deallocate()
    }

    func scan(_ frame: UnsafeRawBufferPointer) -> Result {
        operationCount = 0
        from = -1
        version = -1
        room = 0..<0
        epoch = 0..<0
        guard let base = frame.baseAddress, frame.count > 0 else { return .malformed }
        var r = ByteReader(base.assumingMemoryBound(to: UInt8.self), count: frame.count)
        var isPatch = false
        var hasOps = false
        guard r.take(Byte.openBrace) else { return .malformed }
        if r.take(Byte.closeBrace) { return .other }
        while true {
            guard let key = r.string(), r.take(Byte.colon) else { return .malformed }
            r.skipSpace()
            switch Key(r, key) {
            case .type:
                guard let value = r.string() else { return .other }  // odd type: the decoder says why
                guard r.equals(value, "patch") else { return .other }
                isPatch = true
            case .room:
                guard let value = r.string() else { return .malformed }
                room = value
            case .epoch:
                guard let value = r.string() else { return .malformed }
                epoch = value
            case .from:
                guard let value = r.integer() else { return .malformed }
                from = value
            case .version:
                guard let value = r.integer() else { return .malformed }
                version = value
            case .ops:
                guard scanOperations(&r) else { return .malformed }
                hasOps = true
            case .other:
                guard r.skipValue() else { return .malformed }
            }
            if r.take(Byte.comma) { continue }
            if r.take(Byte.closeBrace) { break }
            return .malformed
        }
        guard isPatch else { return .other }
        guard hasOps, from >= 0, version >= 0, !room.isEmpty, !epoch.isEmpty else { return .malformed }
        return .patch
    }

    /// `[ {op}, ... ]`: records the value members of each operation.
    private func scanOperations(_ r: inout ByteReader) -> Bool {
        guard r.take(Byte.openBracket) else { return false }
        if r.take(Byte.closeBracket) { return true }
        while true {
            guard r.take(Byte.openBrace) else { return false }
            var operation = ScannedOperation()
            if !r.take(Byte.closeBrace) {
                while true {
                    guard let key = r.string(), r.take(Byte.colon) else { return false }
                    r.skipSpace()
                    if r.equals(key, "value") && r.peek == Byte.openBrace {
                        guard scanValue(&r, into: &operation) else { return false }
                    } else {
                        guard r.skipValue() else { return false }
                    }
                    if r.take(Byte.comma) { continue }
                    if r.take(Byte.closeBrace) { break }
                    return false
                }
            }
            append(operation)
            if r.take(Byte.comma) { continue }
            return r.take(Byte.closeBracket)
        }
    }

    /// `{"i":P,"r":RUN,"s":S,"t":T,"z":"..."}` (any order, any other members skipped).
    private func scanValue(_ r: inout ByteReader, into operation: inout ScannedOperation) -> Bool {
        guard r.take(Byte.openBrace) else { return false }
        if r.take(Byte.closeBrace) { return true }
        while true {
            guard let key = r.string(), r.take(Byte.colon) else { return false }
            r.skipSpace()
            var handled = false
            if key.count == 1 {
                let name = r.byte(at: key.lowerBound)
                if name == UInt8(ascii: "i") || name == UInt8(ascii: "s") || name == UInt8(ascii: "t") || name == UInt8(ascii: "r"),
                   let value = r.integer() {
                    switch name {
                    case UInt8(ascii: "i"): operation.publisher = value
                    case UInt8(ascii: "s"): operation.sequence = value
                    case UInt8(ascii: "t"): operation.sentAt = value
                    default: operation.run = value
                    }
                    handled = true
                }
            }
            if !handled { guard r.skipValue() else { return false } }
            if r.take(Byte.comma) { continue }
            return r.take(Byte.closeBrace)
        }
    }

    private func append(_ operation: ScannedOperation) {
        if operationCount == capacity {
            let bigger = UnsafeMutablePointer<ScannedOperation>.allocate(capacity: capacity * 2)
            bigger.moveInitialize(from: operations, count: operationCount)
            operations.deallocate()
            operations = bigger
            capacity *= 2
        }
        (operations + operationCount).initialize(to: operation)
        operationCount += 1
    }

    /// True when the scanned frame's `room` member is exactly `expected` (as encoded on the wire).
    func roomEquals(_ expected: [UInt8], in frame: UnsafeRawBufferPointer) -> Bool {
        rangeEquals(room, expected, in: frame)
    }

    func epochEquals(_ expected: [UInt8], in frame: UnsafeRawBufferPointer) -> Bool {
        rangeEquals(epoch, expected, in: frame)
    }

    private func rangeEquals(_ range: Range<Int>, _ expected: [UInt8], in frame: UnsafeRawBufferPointer) -> Bool {
        guard range.count == expected.count, let base = frame.baseAddress else { return false }
        return expected.withUnsafeBytes { memcmp(base + range.lowerBound, $0.baseAddress!, range.count) == 0 }
    }

    private enum Key {
        case type, room, epoch, from, version, ops, other

        init(_ r: ByteReader, _ key: Range<Int>) {
            switch key.count {
            case 3 where r.equals(key, "ops"): self = .ops
            case 4 where r.equals(key, "type"): self = .type
            case 4 where r.equals(key, "room"): self = .room
            case 4 where r.equals(key, "from"): self = .from
            case 5 where r.equals(key, "epoch"): self = .epoch
            case 7 where r.equals(key, "version"): self = .version
            default: self = .other
            }
        }
    }
}

enum Byte {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let colon = UInt8(ascii: ":")
    static let comma = UInt8(ascii: ",")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let minus = UInt8(ascii: "-")
    static let zero = UInt8(ascii: "0")
}

/// A cursor over one frame's bytes. Every read is bounds-checked against `count`.
struct ByteReader {
    let bytes: UnsafePointer<UInt8>
    let count: Int
    var position = 0

    init(_ bytes: UnsafePointer<UInt8>, count: Int) {
        self.bytes = bytes
        self.count = count
    }

    @inline(__always) func byte(at index: Int) -> UInt8 { bytes[index] }

    @inline(__always) var peek: UInt8 { position < count ? bytes[position] : 0 }

    @inline(__always) mutating func skipSpace() {
        while position < count {
            let c = bytes[position]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            position += 1
        }
    }

    /// Skips whitespace, then consumes `c` if it comes next.
    @inline(__always) mutating func take(_ c: UInt8) -> Bool {
        skipSpace()
        if position < count && bytes[position] == c {
            position += 1
            return true
        }
        return false
    }

    /// At a `"`: the raw contents' range, and the cursor moves past the closing quote.
    mutating func string() -> Range<Int>? {
        skipSpace()
        guard position < count, bytes[position] == Byte.quote else { return nil }
        let start = position + 1
        var searchFrom = start
        while searchFrom <= count {
            guard let hit = memchr(bytes + searchFrom, Int32(Byte.quote), count - searchFrom) else { return nil }
            let end = UnsafePointer<UInt8>(hit.assumingMemoryBound(to: UInt8.self)) - bytes
            var backslashes = 0
            var k = end - 1
            while k >= start && bytes[k] == Byte.backslash {
                backslashes += 1
                k -= 1
            }
            if backslashes % 2 == 0 {
                position = end + 1
                return start..<end
            }
            searchFrom = end + 1
        }
        return nil
    }

    /// A JSON integer (no fraction or exponent, at most 18 digits). Leaves the cursor where it
    /// was and returns nil for anything else.
    mutating func integer() -> Int? {
        var i = position
        var negative = false
        if i < count && bytes[i] == Byte.minus {
            negative = true
            i += 1
        }
        var value = 0
        let digitsStart = i
        while i < count {
            let d = bytes[i] &- Byte.zero
            guard d < 10 else { break }
            value = value &* 10 &+ Int(d)
            i += 1
        }
        let digits = i - digitsStart
        guard digits > 0, digits <= 18 else { return nil }
        if i < count {
            let c = bytes[i]
            if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { return nil }
        }
        position = i
        return negative ? -value : value
    }

    /// Skips one value of any kind (nested objects and arrays included).
    mutating func skipValue() -> Bool {
        skipSpace()
        guard position < count else { return false }
        switch bytes[position] {
        case Byte.quote:
            return string() != nil
        case Byte.openBrace, Byte.openBracket:
            var depth = 0
            while position < count {
                let c = bytes[position]
                if c == Byte.quote {
                    guard string() != nil else { return false }
                    continue
                }
                if c == Byte.openBrace || c == Byte.openBracket {
                    depth += 1
                } else if c == Byte.closeBrace || c == Byte.closeBracket {
                    depth -= 1
                    if depth == 0 {
                        position += 1
                        return true
                    }
                }
                position += 1
            }
            return false
        default:
            let start = position
            while position < count {
                let c = bytes[position]
                if c == Byte.comma || c == Byte.closeBrace || c == Byte.closeBracket || c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { break }
                position += 1
            }
            return position > start
        }
    }

    /// True when the bytes in `range` are exactly `literal` (ASCII).
    @inline(__always) func equals(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        guard range.count == literal.utf8CodeUnitCount else { return false }
        return memcmp(bytes + range.lowerBound, literal.utf8Start, range.count) == 0
    }
}

/// `text` JSON-encoded, without the quotes: how it appears inside a frame.
func encodedStringContents(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    JSONWriter.writeString(text, to: &bytes)
    return Array(bytes.dropFirst().dropLast())
}
