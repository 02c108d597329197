/// A key press decoded from terminal input.
public enum Key: Hashable, Sendable {
    /// A printable character (any script, already decoded from UTF-8).
    case char(Character)
    /// Control plus a letter, lowercased: `.ctrl("c")` is Ctrl-C. Enter, Tab and Backspace have their own cases.
    case ctrl(Character)
    case enter, tab, backTab, backspace, delete, escape
    case up, down, left, right, home, end, pageUp, pageDown
}

/// Turns raw terminal bytes into keys. Escape sequences and UTF-8 characters may arrive split
/// across reads: an incomplete tail is kept until more bytes come, or until `flush()` says the
/// input went quiet (how a lone Escape is told apart from the start of a sequence). Malformed
/// input is dropped byte by byte and never stops the decoder.
public struct KeyDecoder: Sendable {
    private var pending: [UInt8] = []
    private var lastWasCarriageReturn = false

    /// The longest CSI sequence kept while waiting for its final byte; longer ones are garbage.
    private static let maxSequenceLength = 32

    public init() {}

    /// True when an incomplete sequence is waiting for more bytes.
    public var hasPending: Bool { !pending.isEmpty }

    public mutating func decode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [Key] {
        pending.append(contentsOf: bytes)
        var keys: [Key] = []
        var i = 0
        while i < pending.count {
            guard case .consumed(let key, let count) = parse(at: i) else { break }
            if let key { keys.append(key) }
            lastWasCarriageReturn = pending[i] == 0x0D
            i += count
        }
        pending.removeFirst(i)
        return keys
    }

    /// Resolves what is pending as if no more bytes will follow: a lone ESC is the Escape key,
    /// an incomplete sequence is Escape followed by its bytes as keys, a cut UTF-8 character is dropped.
    public mutating func flush() -> [Key] {
        var keys: [Key] = []
        while let first = pending.first {
            pending.removeFirst()
            if first == 0x1B { keys.append(.escape) }
            keys += decode([])
        }
        return keys
    }

    private enum Step {
        case consumed(Key?, Int)
        case needMore
    }

    private func parse(at i: Int) -> Step {
        let b = pending[i]
        switch b {
        case 0x1B:
            return parseEscape(at: i)
        case 0x0D:
            return .consumed(.enter, 1)
        case 0x0A:
            // CR LF (a pasted Windows line end) is one Enter.
            return .consumed(lastWasCarriageReturn ? nil : .enter, 1)
        case 0x09:
            return .consumed(.tab, 1)
        case 0x7F, 0x08:
            return .consumed(.backspace, 1)
        case 0x01...0x1A:
            return .consumed(.ctrl(Character(Unicode.Scalar(b + 0x60))), 1)
        case 0x00, 0x1C...0x1F:
            return .consumed(nil, 1)
        case 0x20...0x7E:
            return .consumed(.char(Character(Unicode.Scalar(b))), 1)
        default:
            return parseUTF8(at: i)
        }
    }

    private func parseEscape(at i: Int) -> Step {
        guard i + 1 < pending.count else { return .needMore }
        switch pending[i + 1] {
        case UInt8(ascii: "["):
            var j = i + 2
            while j < pending.count {
                let d = pending[j]
                switch d {
                case 0x20...0x3F:  // parameter and intermediate bytes
                    j += 1
                    if j - i > Self.maxSequenceLength { return .consumed(nil, j - i) }
                case 0x40...0x7E:
                    return .consumed(Self.csiKey(parameters: pending[(i + 2)..<j], final: d), j - i + 1)
                default:
                    // Not a valid sequence: drop what was read and decode this byte afresh.
                    return .consumed(nil, j - i)
                }
            }
            return .needMore
        case UInt8(ascii: "O"):
            guard i + 2 < pending.count else { return .needMore }
            let d = pending[i + 2]
            guard (0x40...0x7E).contains(d) else { return .consumed(.escape, 1) }
            let key: Key? =
                switch d {
                case UInt8(ascii: "A"): .up
                case UInt8(ascii: "B"): .down
                case UInt8(ascii: "C"): .right
                case UInt8(ascii: "D"): .left
                case UInt8(ascii: "H"): .home
                case UInt8(ascii: "F"): .end
                default: nil
                }
            return .consumed(key, 3)
        default:
            // ESC before anything else (another ESC, or Alt+key): Escape, then that byte on its own.
            return .consumed(.escape, 1)
        }
    }

    private static func csiKey(parameters: ArraySlice<UInt8>, final: UInt8) -> Key? {
        switch final {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "C"): return .right
        case UInt8(ascii: "D"): return .left
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        case UInt8(ascii: "Z"): return .backTab
        case UInt8(ascii: "~"):
            // The first parameter names the key; modifiers after ';' are ignored.
            var number = 0
            for byte in parameters {
                guard (0x30...0x39).contains(byte), number < 1000 else { break }
                number = number * 10 + Int(byte - 0x30)
            }
            switch number {
            case 1, 7: return .home
            case 4, 8: return .end
            case 3: return .delete
            case 5: return .pageUp
            case 6: return .pageDown
            default: return nil
            }
        default:
            return nil
        }
    }

    private func parseUTF8(at i: Int) -> Step {
        let lead = pending[i]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF  // no overlongs
        case 0xED: length = 3; secondRange = 0x80...0x9F  // no surrogates
        case 0xE1...0xEF: length = 3
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF4: length = 4; secondRange = 0x80...0x8F  // nothing above U+10FFFF
        case 0xF1...0xF3: length = 4
        default: return .consumed(nil, 1)
        }
        var value = UInt32(lead) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
        for k in 1..<length {
            guard i + k < pending.count else { return .needMore }
            let byte = pending[i + k]
            guard (k == 1 ? secondRange : 0x80...0xBF).contains(byte) else { return .consumed(nil, 1) }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        guard let scalar = Unicode.Scalar(value), value >= 0xA0 else { return .consumed(nil, length) }
        return .consumed(.char(Character(scalar)), length)
    }
}
