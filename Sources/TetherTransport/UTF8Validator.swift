/// UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF) fed in
/// pieces, as lws hands over a text message's payload. The transport validates text messages and
/// close reasons itself instead of lws's `LWS_SERVER_OPTION_VALIDATE_UTF8`, because lws 4.1 checks
/// a close reason under that option and, when it is not UTF-8, drops the TCP connection without
/// the 1007 close frame RFC 6455 asks for (docs/DESIGN.md, Transport).
struct UTF8Validator {
    /// Continuation bytes the current character still needs (0: between characters).
    private var pending = 0
    /// The range the next continuation byte must fall in (narrower after E0, ED, F0, F4).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// No character is cut off: the text may end here.
    var isComplete: Bool { pending == 0 }

    /// Reads `bytes`; false at the first byte that cannot continue valid UTF-8.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            if pending == 0 {
                // ASCII, the common case, eight bytes at a time.
                while index + 8 <= count,
                      bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                }
                guard index < count else { return true }
                let byte = bytes[index]
                index += 1
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: start(1, 0x80, 0xBF)
                case 0xE0: start(2, 0xA0, 0xBF)
                case 0xED: start(2, 0x80, 0x9F)
                case 0xE1...0xEF: start(2, 0x80, 0xBF)
                case 0xF0: start(3, 0x90, 0xBF)
                case 0xF1...0xF3: start(3, 0x80, 0xBF)
                case 0xF4: start(3, 0x80, 0x8F)
                default: return false
                }
            } else {
                let byte = bytes[index]
                index += 1
                guard byte >= lower && byte <= upper else { return false }
                lower = 0x80
                upper = 0xBF
                pending -= 1
            }
        }
        return true
    }

    private mutating func start(_ continuations: Int, _ lower: UInt8, _ upper: UInt8) {
        pending = continuations
        self.lower = lower
        self.upper = upper
    }

    /// Whether `bytes` alone are complete, valid UTF-8.
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.consume(bytes) && validator.isComplete
    }
}
