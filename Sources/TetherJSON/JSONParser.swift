/// Why a document was rejected, and where: `offset` is the byte offset (from 0) into the input
/// at which the problem was found. `description` reads like "unexpected end of input at byte 17".
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Byte offset into the input where the problem was detected.
    public var offset: Int
    /// Short human message without the position, e.g. "unexpected end of input".
    public var message: String

    public init(_ message: String, at offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 parser from UTF-8 bytes to `JSON`, safe on hostile input.
///
/// - Rejects trailing garbage, leading zeros, bare control characters, invalid escapes, lone
///   surrogate escapes, invalid UTF-8 (overlong forms, encoded surrogates, code points above
///   U+10FFFF, truncated or stray bytes), single quotes, NaN/Infinity, trailing commas and a BOM.
/// - Integers that fit in `Int` become `.int`; other numbers `.double`. A number whose magnitude
///   overflows `Double` (like `1e400`) is an error; `-0` becomes `.double(-0.0)` to keep its sign.
/// - Nesting deeper than `maxDepth` is an error. The parser is iterative, so no input can
///   overflow the stack whatever the limit.
/// - Duplicate object keys: the last one wins. (Keys are Swift `String`s, so two keys that are
///   canonically equivalent Unicode, like precomposed and decomposed "é", count as duplicates.)
public struct JSONParser: Sendable {
    public static let defaultMaxDepth = 512

    /// Most arrays/objects that may be open at once. The top-level container is depth 1.
    public var maxDepth: Int

    public init(maxDepth: Int = JSONParser.defaultMaxDepth) {
        self.maxDepth = maxDepth
    }

    /// Parses one JSON document from raw UTF-8 bytes without copying them.
    public func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSON {
        let result = bytes.withMemoryRebound(to: UInt8.self) { buffer in
            Result { () throws(JSONParseError) -> JSON in try parse(buffer) }
        }
        return try result.get()
    }

    /// Parses one JSON document from UTF-8 bytes.
    public func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSON {
        var state = _JSONParserState(bytes: bytes, maxDepth: maxDepth)
        return try state.parseDocument()
    }

    /// Parses one JSON document from UTF-8 bytes.
    public func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSON {
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONParseError) -> JSON in try parse(buffer) }
        }
        return try result.get()
    }

    /// Parses one JSON document from any collection of UTF-8 bytes (`ArraySlice`, `Data`, ...).
    public func parse<Bytes: Collection>(_ bytes: Bytes) throws(JSONParseError) -> JSON where Bytes.Element == UInt8 {
        let direct = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) -> JSON in try parse(buffer) }
        }
        if let direct { return try direct.get() }
        return try parse(Array(bytes))
    }

    /// Parses one JSON document from a string (its UTF-8 form).
    public func parse(_ text: String) throws(JSONParseError) -> JSON {
        let direct = text.utf8.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) -> JSON in try parse(buffer) }
        }
        if let direct { return try direct.get() }
        return try parse(Array(text.utf8))
    }
}

extension JSON {
    /// Parses a JSON document with the default parser settings.
    public init(parsing text: String) throws(JSONParseError) {
        self = try JSONParser().parse(text)
    }

    /// Parses a JSON document from UTF-8 bytes with the default parser settings.
    public init(parsing bytes: [UInt8]) throws(JSONParseError) {
        self = try JSONParser().parse(bytes)
    }
}

// MARK: - Implementation

private enum Byte {
    static let quote: UInt8 = 0x22  // "
    static let backslash: UInt8 = 0x5C  // \
    static let slash: UInt8 = 0x2F  // /
    static let comma: UInt8 = 0x2C  // ,
    static let colon: UInt8 = 0x3A  // :
    static let openBracket: UInt8 = 0x5B  // [
    static let closeBracket: UInt8 = 0x5D  // ]
    static let openBrace: UInt8 = 0x7B  // {
    static let closeBrace: UInt8 = 0x7D  // }
    static let minus: UInt8 = 0x2D  // -
    static let plus: UInt8 = 0x2B  // +
    static let dot: UInt8 = 0x2E  // .
    static let zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39
    static let lowerE: UInt8 = 0x65
    static let upperE: UInt8 = 0x45
}

/// Exact powers of ten representable in a Double (10^0 ... 10^22), for the fast number path.
@inline(__always)
private func exactPowerOfTen(_ e: Int) -> Double {
    switch e {
    case 0: return 1e0
    case 1: return 1e1
    case 2: return 1e2
    case 3: return 1e3
    case 4: return 1e4
    case 5: return 1e5
    case 6: return 1e6
    case 7: return 1e7
    case 8: return 1e8
    case 9: return 1e9
    case 10: return 1e10
    case 11: return 1e11
    case 12: return 1e12
    case 13: return 1e13
    case 14: return 1e14
    case 15: return 1e15
    case 16: return 1e16
    case 17: return 1e17
    case 18: return 1e18
    case 19: return 1e19
    case 20: return 1e20
    case 21: return 1e21
    default: return 1e22
    }
}

private struct _JSONParserState {
    let bytes: UnsafeBufferPointer<UInt8>
    let end: Int
    let maxDepth: Int
    var index = 0

    // Open containers, innermost last. Each frame records where its contents start on one of two
    // flat stacks shared by all open containers: array elements on `elements`, object members
    // on `members`. A container is built once, at its exact size, when it closes (no regrowth,
    // no rehashing, no copy-on-write of nested containers).
    var frames: [Frame] = []
    var elements: [JSON] = []
    var members: [(key: String, value: JSON)] = []

    struct Frame {
        var isObject: Bool
        var start: Int
    }

    /// Reused buffer for strings that contain escapes.
    var scratch: [UInt8] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.end = bytes.count
        self.maxDepth = maxDepth
    }

    // MARK: Errors

    func error(_ message: String, at offset: Int) -> JSONParseError {
        JSONParseError(message, at: offset)
    }

    func unexpected(at offset: Int) -> JSONParseError {
        guard offset < end else { return error("unexpected end of input", at: offset) }
        let byte = bytes[offset]
        if byte >= 0x21 && byte < 0x7F {
            let scalar = Character(Unicode.Scalar(byte))
            switch byte {
            case 0x27: return error("unexpected character \"'\" (strings use double quotes)", at: offset)
            default: return error("unexpected character '\(scalar)'", at: offset)
            }
        }
        return error("unexpected byte 0x\(hex2(byte))", at: offset)
    }

    func hex2(_ byte: UInt8) -> String {
        let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F"]
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    // MARK: Structure

    @inline(__always)
    mutating func skipWhitespace() {
        while index < end {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        skipWhitespace()
        var value: JSON
        outer: while true {
            // Parse one value; containers are opened here and closed below.
            skipWhitespace()
            guard index < end else { throw error("unexpected end of input", at: index) }
            let byte = bytes[index]
            switch byte {
            case Byte.openBracket:
                try checkDepth()
                index += 1
                skipWhitespace()
                if index < end && bytes[index] == Byte.closeBracket {
                    index += 1
                    value = .array([])
                } else {
                    if elements.capacity == 0 { elements.reserveCapacity(16) }
                    frames.append(Frame(isObject: false, start: elements.count))
                    continue outer
                }
            case Byte.openBrace:
                try checkDepth()
                index += 1
                skipWhitespace()
                if index < end && bytes[index] == Byte.closeBrace {
                    index += 1
                    value = .object([:])
                } else {
                    if members.capacity == 0 { members.reserveCapacity(16) }
                    frames.append(Frame(isObject: true, start: members.count))
                    try parseKeyAndColon()
                    continue outer
                }
            case Byte.quote:
                value = .string(try parseString())
            case Byte.minus, Byte.zero...Byte.nine:
                value = try parseNumber()
            case 0x74:  // t
                try expectLiteral("true")
                value = .bool(true)
            case 0x66:  // f
                try expectLiteral("false")
                value = .bool(false)
            case 0x6E:  // n
                try expectLiteral("null")
                value = .null
            case Byte.closeBracket, Byte.closeBrace:
                if index > 0, let previous = lastNonWhitespace(before: index), bytes[previous] == Byte.comma {
                    throw error("trailing comma", at: previous)
                }
                throw unexpected(at: index)
            default:
                throw unexpected(at: index)
            }

            // A value is complete: attach it to the innermost open container, closing containers
            // for as long as their closing bracket follows.
            while let frame = frames.last {
                skipWhitespace()
                if frame.isObject {
                    members[members.count - 1].value = value
                    guard index < end else { throw error("unexpected end of input", at: index) }
                    switch bytes[index] {
                    case Byte.comma:
                        index += 1
                        try parseKeyAndColon()
                        continue outer
                    case Byte.closeBrace:
                        index += 1
                        frames.removeLast()
                        value = .object(popMembers(from: frame.start))
                    default:
                        throw expected("',' or '}'", at: index)
                    }
                } else {
                    elements.append(value)
                    guard index < end else { throw error("unexpected end of input", at: index) }
                    switch bytes[index] {
                    case Byte.comma:
                        index += 1
                        continue outer
                    case Byte.closeBracket:
                        index += 1
                        frames.removeLast()
                        value = .array(popElements(from: frame.start))
                    default:
                        throw expected("',' or ']'", at: index)
                    }
                }
            }
            break outer
        }
        skipWhitespace()
        if index < end {
            throw error("unexpected data after the end of the document", at: index)
        }
        return value
    }

    /// Moves `elements[start...]` into a new array of exactly that size.
    mutating func popElements(from start: Int) -> [JSON] {
        let count = elements.count - start
        guard count > 0 else { return [] }
        let result = elements.withUnsafeMutableBufferPointer { stack in
            [JSON](unsafeUninitializedCapacity: count) { buffer, initialized in
                guard let source = stack.baseAddress, let target = buffer.baseAddress else { return }
                // Move the values out, leaving trivial `.null`s behind for removeLast to destroy.
                target.moveInitialize(from: source + start, count: count)
                (source + start).initialize(repeating: .null, count: count)
                initialized = count
            }
        }
        elements.removeLast(count)
        return result
    }

    /// Moves `members[start...]` into a new dictionary sized for them; a repeated key keeps its
    /// last value.
    mutating func popMembers(from start: Int) -> [String: JSON] {
        let count = members.count - start
        var result = [String: JSON](minimumCapacity: count)
        members.withUnsafeMutableBufferPointer { stack in
            guard let base = stack.baseAddress else { return }
            for i in start..<(start + count) {
                let member = (base + i).move()
                (base + i).initialize(to: (key: "", value: .null))
                result[member.key] = member.value
            }
        }
        members.removeLast(count)
        return result
    }

    func expected(_ what: String, at offset: Int) -> JSONParseError {
        guard offset < end else { return error("unexpected end of input", at: offset) }
        return error("expected \(what)", at: offset)
    }

    func lastNonWhitespace(before offset: Int) -> Int? {
        var i = offset - 1
        while i >= 0 {
            switch bytes[i] {
            case 0x20, 0x0A, 0x0D, 0x09: i -= 1
            default: return i
            }
        }
        return nil
    }

    mutating func checkDepth() throws(JSONParseError) {
        if frames.count >= maxDepth {
            throw error("nesting too deep (limit \(maxDepth))", at: index)
        }
    }

    /// After `{` or `,` inside an object: a string key, then `:`.
    mutating func parseKeyAndColon() throws(JSONParseError) {
        skipWhitespace()
        guard index < end else { throw error("unexpected end of input", at: index) }
        guard bytes[index] == Byte.quote else {
            if bytes[index] == Byte.closeBrace, let previous = lastNonWhitespace(before: index), bytes[previous] == Byte.comma {
                throw error("trailing comma", at: previous)
            }
            throw expected("string key", at: index)
        }
        members.append((try parseString(), .null))
        skipWhitespace()
        guard index < end, bytes[index] == Byte.colon else { throw expected("':'", at: index) }
        index += 1
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let start = literal.utf8Start
        for k in 0..<count {
            let at = index + k
            guard at < end else { throw error("unexpected end of input", at: at) }
            guard bytes[at] == start[k] else { throw unexpected(at: index) }
        }
        index += count
    }

    // MARK: Strings

    /// Parses a string starting at the opening quote; leaves `index` after the closing quote.
    mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        let start = index
        var i = index
        // Fast path: no escapes. Scan, validating UTF-8, then build the String once.
        while i < end {
            let byte = bytes[i]
            if byte < 0x80 {
                if byte == Byte.quote {
                    index = i + 1
                    return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                }
                if byte == Byte.backslash {
                    return try parseEscapedString(start: start, firstEscape: i)
                }
                if byte < 0x20 { throw controlCharacter(at: i) }
                i += 1
            } else {
                i = try validateMultibyte(at: i)
            }
        }
        throw error("unterminated string", at: end)
    }

    func controlCharacter(at offset: Int) -> JSONParseError {
        error("unescaped control character 0x\(hex2(bytes[offset])) in string", at: offset)
    }

    /// Validates the UTF-8 sequence whose lead byte (>= 0x80) is at `i`; returns the index after it.
    @inline(__always)
    func validateMultibyte(at i: Int) throws(JSONParseError) -> Int {
        let lead = bytes[i]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0  // below is overlong
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F  // above encodes a surrogate
        case 0xF0: length = 4; low = 0x90  // below is overlong
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F  // above is past U+10FFFF
        case 0x80...0xBF: throw error("invalid UTF-8 (unexpected continuation byte)", at: i)
        case 0xC0, 0xC1: throw error("invalid UTF-8 (overlong encoding)", at: i)
        default: throw error("invalid UTF-8 (byte 0x\(hex2(lead)) never appears in UTF-8)", at: i)
        }
        guard i + 1 < end else { throw error("invalid UTF-8 (truncated sequence)", at: i) }
        let second = bytes[i + 1]
        guard second >= low && second <= high else {
            if second < 0x80 || second > 0xBF { throw error("invalid UTF-8 (truncated sequence)", at: i) }
            if lead == 0xED { throw error("invalid UTF-8 (encoded surrogate)", at: i) }
            if lead == 0xF4 { throw error("invalid UTF-8 (code point above U+10FFFF)", at: i) }
            throw error("invalid UTF-8 (overlong encoding)", at: i)
        }
        var k = 2
        while k < length {
            guard i + k < end, bytes[i + k] & 0xC0 == 0x80 else {
                throw error("invalid UTF-8 (truncated sequence)", at: i)
            }
            k += 1
        }
        return i + length
    }

    /// Slow path for a string with escapes: decodes into `scratch`.
    mutating func parseEscapedString(start: Int, firstEscape: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<firstEscape]))
        var i = firstEscape
        while i < end {
            let byte = bytes[i]
            if byte == Byte.quote {
                index = i + 1
                return String(decoding: scratch, as: UTF8.self)
            }
            if byte == Byte.backslash {
                guard i + 1 < end else { throw error("unterminated string", at: end) }
                let escaped = bytes[i + 1]
                switch escaped {
                case Byte.quote: scratch.append(Byte.quote)
                case Byte.backslash: scratch.append(Byte.backslash)
                case Byte.slash: scratch.append(Byte.slash)
                case 0x62: scratch.append(0x08)  // b
                case 0x66: scratch.append(0x0C)  // f
                case 0x6E: scratch.append(0x0A)  // n
                case 0x72: scratch.append(0x0D)  // r
                case 0x74: scratch.append(0x09)  // t
                case 0x75:  // u
                    i = try parseUnicodeEscape(at: i)
                    continue
                default:
                    throw error("invalid escape sequence", at: i)
                }
                i += 2
            } else if byte < 0x80 {
                if byte < 0x20 { throw controlCharacter(at: i) }
                scratch.append(byte)
                i += 1
            } else {
                let next = try validateMultibyte(at: i)
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[i..<next]))
                i = next
            }
        }
        throw error("unterminated string", at: end)
    }

    func hexQuad(at i: Int) throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for k in 0..<4 {
            guard i + k < end else { throw error("unterminated string", at: end) }
            let c = bytes[i + k]
            let digit: UInt8
            switch c {
            case 0x30...0x39: digit = c &- 0x30
            case 0x41...0x46: digit = c &- 0x41 &+ 10
            case 0x61...0x66: digit = c &- 0x61 &+ 10
            default: throw error("invalid \\u escape (expected 4 hex digits)", at: i + k)
            }
            value = value &<< 4 | UInt32(digit)
        }
        return value
    }

    /// `i` is at the backslash of `\uXXXX`; appends the scalar and returns the index after it
    /// (after both halves of a surrogate pair).
    mutating func parseUnicodeEscape(at i: Int) throws(JSONParseError) -> Int {
        let unit = try hexQuad(at: i + 2)
        var scalarValue = unit
        var next = i + 6
        switch unit {
        case 0xD800...0xDBFF:
            guard next + 1 < end, bytes[next] == Byte.backslash, bytes[next + 1] == 0x75 else {
                throw error("lone surrogate in \\u escape", at: i)
            }
            let low = try hexQuad(at: next + 2)
            guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate in \\u escape", at: i) }
            scalarValue = 0x10000 &+ ((unit &- 0xD800) &<< 10) &+ (low &- 0xDC00)
            next += 6
        case 0xDC00...0xDFFF:
            throw error("lone surrogate in \\u escape", at: i)
        default:
            break
        }
        // Surrogates were handled above, so `scalarValue` is a valid scalar below 0x110000.
        let v = scalarValue
        if v < 0x80 {
            scratch.append(UInt8(truncatingIfNeeded: v))
        } else if v < 0x800 {
            scratch.append(UInt8(truncatingIfNeeded: 0xC0 | v >> 6))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | v & 0x3F))
        } else if v < 0x10000 {
            scratch.append(UInt8(truncatingIfNeeded: 0xE0 | v >> 12))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | (v >> 6) & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | v & 0x3F))
        } else {
            scratch.append(UInt8(truncatingIfNeeded: 0xF0 | v >> 18))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | (v >> 12) & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | (v >> 6) & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | v & 0x3F))
        }
        return next
    }

    // MARK: Numbers

    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = index
        var i = index
        let negative = bytes[i] == Byte.minus
        if negative { i += 1 }
        guard i < end else { throw error("unexpected end of input", at: i) }

        // Integer part. Accumulate negatively so Int.min fits.
        var accumulator = 0
        var overflow = false
        var significand: UInt64 = 0  // first up to 19 significant digits, for the fast double path
        var significantDigits = 0
        var droppedDigits = 0  // integer digits that did not fit in `significand`
        let first = bytes[i]
        if first == Byte.zero {
            i += 1
            if i < end, bytes[i] >= Byte.zero && bytes[i] <= Byte.nine {
                throw error("leading zeros are not allowed", at: start)
            }
        } else if first > Byte.zero && first <= Byte.nine {
            while i < end {
                let c = bytes[i]
                guard c >= Byte.zero && c <= Byte.nine else { break }
                let digit = Int(c &- Byte.zero)
                if !overflow {
                    let (m, o1) = accumulator.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.subtractingReportingOverflow(digit)
                    if o1 || o2 { overflow = true } else { accumulator = s }
                }
                if significantDigits < 19 {
                    significand = significand &* 10 &+ UInt64(digit)
                    significantDigits += 1
                } else {
                    droppedDigits += 1
                }
                i += 1
            }
        } else {
            throw error(negative ? "expected digit after '-'" : "invalid number", at: i)
        }

        var isInteger = true
        var fractionDigitsUsed = 0
        var fractionTruncated = false
        if i < end && bytes[i] == Byte.dot {
            isInteger = false
            i += 1
            guard i < end else { throw error("unexpected end of input", at: i) }
            guard bytes[i] >= Byte.zero && bytes[i] <= Byte.nine else {
                throw error("expected digit after decimal point", at: i)
            }
            while i < end {
                let c = bytes[i]
                guard c >= Byte.zero && c <= Byte.nine else { break }
                if significantDigits < 19 {
                    if significantDigits > 0 || c != Byte.zero {
                        significand = significand &* 10 &+ UInt64(c &- Byte.zero)
                        significantDigits += 1
                    }
                    fractionDigitsUsed += 1
                } else if c != Byte.zero {
                    fractionTruncated = true
                }
                i += 1
            }
        }

        var exponent = 0
        if i < end && (bytes[i] == Byte.lowerE || bytes[i] == Byte.upperE) {
            isInteger = false
            i += 1
            guard i < end else { throw error("unexpected end of input", at: i) }
            var exponentNegative = false
            if bytes[i] == Byte.plus || bytes[i] == Byte.minus {
                exponentNegative = bytes[i] == Byte.minus
                i += 1
                guard i < end else { throw error("unexpected end of input", at: i) }
            }
            guard bytes[i] >= Byte.zero && bytes[i] <= Byte.nine else {
                throw error("expected digit in exponent", at: i)
            }
            while i < end {
                let c = bytes[i]
                guard c >= Byte.zero && c <= Byte.nine else { break }
                if exponent < 1_000_000 { exponent = exponent * 10 + Int(c &- Byte.zero) }  // saturates
                i += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        index = i

        if isInteger && !overflow {
            if negative {
                if accumulator == 0 { return .double(-0.0) }
                return .int(accumulator)
            }
            if accumulator != Int.min { return .int(-accumulator) }
        }

        // Fast exact path (Clinger): a significand below 2^53 and a power of ten up to 10^22 are
        // both exact doubles, so one multiplication or division rounds correctly.
        if droppedDigits == 0 && !fractionTruncated && significand <= (1 << 53) {
            let power = exponent - fractionDigitsUsed
            if power >= -22 && power <= 22 {
                var d = Double(significand)
                if power < 0 { d /= exactPowerOfTen(-power) } else { d *= exactPowerOfTen(power) }
                return .double(negative ? -d : d)
            }
        }

        // General path: the standard library's correctly rounded conversion.
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let d = Double(text) else { throw error("invalid number", at: start) }
        guard d.isFinite else { throw error("number out of range", at: start) }
        return .double(d)
    }
}
