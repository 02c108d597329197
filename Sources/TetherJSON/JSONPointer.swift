/// A JSON Pointer (RFC 6901): a path of reference tokens into a JSON document.
///
/// Tokens are kept unescaped; `description` escapes `~` as `~0` and `/` as `~1`.
public struct JSONPointer: Hashable, Sendable {
    public var tokens: [String]

    public static let root = JSONPointer(tokens: [])

    public init(tokens: [String]) {
        self.tokens = tokens
    }

    /// Parses the string form: "" (the whole document) or "/a/b~1c".
    public init(parsing string: String) throws(JSONPointerError) {
        guard !string.isEmpty else { self.tokens = []; return }
        guard string.utf8.first == UInt8(ascii: "/") else { throw .missingLeadingSlash(string) }
        var tokens: [String] = []
        for raw in string.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst() {
            tokens.append(try Self.unescape(raw, in: string))
        }
        self.tokens = tokens
    }

    private static func unescape(_ raw: Substring.UTF8View.SubSequence, in whole: String) throws(JSONPointerError) -> String {
        guard raw.contains(UInt8(ascii: "~")) else { return String(decoding: raw, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var iterator = raw.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "~") else { out.append(byte); continue }
            switch iterator.next() {
            case UInt8(ascii: "0"): out.append(UInt8(ascii: "~"))
            case UInt8(ascii: "1"): out.append(UInt8(ascii: "/"))
            default: throw .invalidEscape(whole)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var isRoot: Bool { tokens.isEmpty }
    public var lastToken: String? { tokens.last }

    /// The pointer to the containing value; the root's parent is the root.
    public var parent: JSONPointer { JSONPointer(tokens: Array(tokens.dropLast())) }

    public func appending(_ token: String) -> JSONPointer {
        JSONPointer(tokens: tokens + [token])
    }

    public func appending(index: Int) -> JSONPointer {
        appending(String(index))
    }

    /// True when `self` is `other` or one of its ancestors.
    public func isPrefix(of other: JSONPointer) -> Bool {
        tokens.count <= other.tokens.count && zip(tokens, other.tokens).allSatisfy { $0 == $1 }
    }

    /// True when a change at `self` may change the value at `other` or below it: one of the two
    /// contains the other.
    public func overlaps(_ other: JSONPointer) -> Bool {
        isPrefix(of: other) || other.isPrefix(of: self)
    }

    /// The array index a token names, per RFC 6901: "0" or digits without a leading zero.
    /// "-" (past the end) is handled by the caller.
    public static func arrayIndex(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, utf8.count <= 18 else { return nil }
        if first == UInt8(ascii: "0") { return utf8.count == 1 ? 0 : nil }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

extension JSONPointer: CustomStringConvertible {
    public var description: String {
        var out = ""
        for token in tokens {
            out += "/"
            for character in token {
                switch character {
                case "~": out += "~0"
                case "/": out += "~1"
                default: out.append(character)
                }
            }
        }
        return out
    }
}

extension JSONPointer: ExpressibleByStringLiteral {
    /// For literals in code; a malformed literal is a programming error.
    public init(stringLiteral value: String) {
        do { try self.init(parsing: value) } catch { preconditionFailure("invalid JSON Pointer literal \(value): \(error)") }
    }
}

public enum JSONPointerError: Error, Equatable, CustomStringConvertible {
    case missingLeadingSlash(String)
    case invalidEscape(String)

    public var description: String {
        switch self {
        case .missingLeadingSlash(let s): return "JSON Pointer \"\(s)\" must be empty or start with /"
        case .invalidEscape(let s): return "JSON Pointer \"\(s)\" has a ~ not followed by 0 or 1"
        }
    }
}
