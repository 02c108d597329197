/// Subject tokens from arbitrary names (room names may hold `.`, `*`, `>`, spaces...).
public enum NATSSubject {
    /// One subject token (also a valid KV key) for `name`: ASCII letters, digits, `-` and `_`
    /// stay; every other byte of its UTF-8 becomes `=HH` (hex). Reversible by `unescape`, and two
    /// names never share a token.
    public static func escape(_ name: String) -> String {
        var token = ""
        token.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                token.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                token.unicodeScalars.append("=")
                token.unicodeScalars.append(hex[Int(byte >> 4)])
                token.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return token.isEmpty ? "=" : token  // an empty name still needs a non-empty token
    }

    /// The name `escape` made `token` from, or nil if `token` is not one of its results.
    public static func unescape(_ token: String) -> String? {
        if token == "=" { return "" }
        var bytes: [UInt8] = []
        var iterator = token.utf8.makeIterator()
        func hexValue(_ byte: UInt8?) -> UInt8? {
            switch byte {
            case let byte? where byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case let byte? where byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "=") {
                guard let high = hexValue(iterator.next()), let low = hexValue(iterator.next()) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard let name = String(validating: bytes, as: UTF8.self), escape(name) == token else { return nil }
        return name
    }
}
