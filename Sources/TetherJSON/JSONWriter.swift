/// Compact, deterministic JSON serialization.
///
/// - No whitespace. Object keys sorted by their UTF-8 bytes, so one value always gives the same
///   bytes whatever the insertion order.
/// - Strings: `"` and `\` escaped, control characters as `\n \r \t \b \f` or `\u00XX`; everything
///   else (including `/` and all non-ASCII) written as raw UTF-8.
/// - Integers in decimal; doubles in the shortest form that reads back to the same double
///   (`1.0`, `0.1`, `1e-07`, `5e+20`); non-finite doubles as `null`.
///
/// The building blocks are public so frames can be assembled by hand around pre-encoded parts:
///
///     var frame: [UInt8] = []
///     frame.append(contentsOf: #"{"type":"patch","room":"#.utf8)
///     JSONWriter.writeString(room, to: &frame)
///     frame.append(contentsOf: #","ops":"#.utf8)
///     frame.append(contentsOf: encodedOps)
///     frame.append(UInt8(ascii: "}"))
public enum JSONWriter {
    /// Encodes `value` into a new byte array.
    public static func encode(_ value: JSON) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(initialCapacity(for: value))
        write(value, to: &buffer)
        return buffer
    }

    /// Appends the encoding of `value` to `buffer`.
    public static func write(_ value: JSON, to buffer: inout [UInt8]) {
        switch value {
        case .null:
            appendLiteral("null", to: &buffer)
        case .bool(let b):
            if b { appendLiteral("true", to: &buffer) } else { appendLiteral("false", to: &buffer) }
        case .int(let i):
            writeInt(i, to: &buffer)
        case .double(let d):
            writeDouble(d, to: &buffer)
        case .string(let s):
            writeString(s, to: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if first { first = false } else { buffer.append(UInt8(ascii: ",")) }
                write(element, to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let members):
            writeObject(members, to: &buffer)
        }
    }

    /// Appends `string` as a quoted, escaped JSON string.
    public static func writeString(_ string: String, to buffer: inout [UInt8]) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
            writeStringBytes(utf8, to: &buffer)
        }
        if done == nil {
            var copy = string
            copy.makeContiguousUTF8()
            copy.utf8.withContiguousStorageIfAvailable { writeStringBytes($0, to: &buffer) }
        }
    }

    /// Appends the bytes of a string (already valid UTF-8) quoted and escaped.
    public static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]) {
        writeStringBytes(bytes, to: &buffer)
    }

    /// Appends an integer in decimal.
    public static func writeInt(_ value: Int, to buffer: inout [UInt8]) {
        if value >= 0 && value < 10 {
            buffer.append(UInt8(truncatingIfNeeded: value) &+ 0x30)
            return
        }
        // 20 digits hold UInt64.max; one more byte for the sign.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21) { digits in
            var magnitude = value.magnitude
            var position = 21
            repeat {
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                position -= 1
                digits[position] = UInt8(truncatingIfNeeded: remainder) &+ 0x30
                magnitude = quotient
            } while magnitude != 0
            if value < 0 {
                position -= 1
                digits[position] = UInt8(ascii: "-")
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[position..<21]))
        }
    }

    /// Appends a double in its shortest round-tripping form; non-finite values become `null`.
    public static func writeDouble(_ value: Double, to buffer: inout [UInt8]) {
        guard value.isFinite else {
            appendLiteral("null", to: &buffer)
            return
        }
        // Swift's description is the shortest representation that round-trips, and its forms
        // ("1.0", "-0.0", "0.1", "1e-07", "5e+20", "1.7976931348623157e+308") are all valid JSON.
        var text = value.description
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { buffer.append(contentsOf: $0) }
        if done == nil {
            text.makeContiguousUTF8()
            buffer.append(contentsOf: text.utf8)
        }
    }

    // MARK: - Internals

    @inline(__always)
    static func appendLiteral(_ literal: StaticString, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    static func initialCapacity(for value: JSON) -> Int {
        switch value {
        case .array(let a): return 16 + a.count * 32
        case .object(let o): return 16 + o.count * 32
        case .string(let s): return s.utf8.count + 8
        default: return 24
        }
    }

    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x22 || byte == 0x5C
    }

    static func writeStringBytes(_ utf8: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        var runStart = 0
        var i = 0
        let count = utf8.count
        while i < count {
            let byte = utf8[i]
            if !needsEscape(byte) {
                i += 1
                continue
            }
            if runStart < i {
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
            }
            appendEscape(for: byte, to: &buffer)
            i += 1
            runStart = i
        }
        if runStart < count {
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
        }
        buffer.append(UInt8(ascii: "\""))
    }

    static func appendEscape(for byte: UInt8, to buffer: inout [UInt8]) {
        let backslash = UInt8(ascii: "\\")
        switch byte {
        case 0x22: buffer.append(backslash); buffer.append(0x22)
        case 0x5C: buffer.append(backslash); buffer.append(backslash)
        case 0x0A: buffer.append(backslash); buffer.append(UInt8(ascii: "n"))
        case 0x0D: buffer.append(backslash); buffer.append(UInt8(ascii: "r"))
        case 0x09: buffer.append(backslash); buffer.append(UInt8(ascii: "t"))
        case 0x08: buffer.append(backslash); buffer.append(UInt8(ascii: "b"))
        case 0x0C: buffer.append(backslash); buffer.append(UInt8(ascii: "f"))
        default:
            let hex: StaticString = "0123456789abcdef"
            let digits = hex.utf8Start
            appendLiteral("\\u00", to: &buffer)
            buffer.append(digits[Int(byte >> 4)])
            buffer.append(digits[Int(byte & 0x0F)])
        }
    }

    static func writeObject(_ members: [String: JSON], to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        let count = members.count
        if count == 1, let only = members.first {
            writeString(only.key, to: &buffer)
            buffer.append(UInt8(ascii: ":"))
            write(only.value, to: &buffer)
        } else if count > 1 {
            // Sort the dictionary's indices (not copies of its keys) by key bytes, then walk them.
            withUnsafeTemporaryAllocation(of: Dictionary<String, JSON>.Index.self, capacity: count) { order in
                var n = 0
                var index = members.startIndex
                while index != members.endIndex && n < count {
                    order.initializeElement(at: n, to: index)
                    n += 1
                    index = members.index(after: index)
                }
                var sorted = UnsafeMutableBufferPointer(rebasing: order[0..<n])
                if n <= 12 {
                    // Insertion sort: fewer comparisons and no closure overhead for small objects.
                    var k = 1
                    while k < n {
                        let item = sorted[k]
                        let key = members[item].key
                        var j = k - 1
                        while j >= 0 && utf8Less(key, members[sorted[j]].key) {
                            sorted[j + 1] = sorted[j]
                            j -= 1
                        }
                        sorted[j + 1] = item
                        k += 1
                    }
                } else {
                    sorted.sort { utf8Less(members[$0].key, members[$1].key) }
                }
                var first = true
                for position in sorted {
                    if first { first = false } else { buffer.append(UInt8(ascii: ",")) }
                    let member = members[position]
                    writeString(member.key, to: &buffer)
                    buffer.append(UInt8(ascii: ":"))
                    write(member.value, to: &buffer)
                }
                sorted.deinitialize()
            }
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// Byte-wise UTF-8 order (the same as code point order).
    static func utf8Less(_ a: String, _ b: String) -> Bool {
        let fast: Bool?? = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb in
                let common = min(pa.count, pb.count)
                var i = 0
                while i < common {
                    let x = pa[i]
                    let y = pb[i]
                    if x != y { return x < y }
                    i += 1
                }
                return pa.count < pb.count
            }
        }
        if let fast, let fast { return fast }
        return a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}

extension JSON {
    /// The compact, deterministic encoding of this value (see `JSONWriter`).
    public func encoded() -> [UInt8] {
        JSONWriter.encode(self)
    }

    /// Appends the encoding of this value to `buffer`.
    public func write(to buffer: inout [UInt8]) {
        JSONWriter.write(self, to: &buffer)
    }

    /// The encoding of this value as a string.
    public var jsonString: String {
        String(decoding: encoded(), as: UTF8.self)
    }
}
