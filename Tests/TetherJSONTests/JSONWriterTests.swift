import Foundation
import Testing

@testable import TetherJSON

// MARK: - Shared test helpers (also used by JSONParserTests and JSONCodingTests)

/// SplitMix64: a tiny seeded generator so random tests are reproducible.
struct JSONTestRNG: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// Seeded random values for property tests.
enum JSONFuzz {
    static let scalarPool: [Unicode.Scalar] = {
        var pool: [Unicode.Scalar] = []
        pool += "abcxyzABCXYZ0189 _-./:".unicodeScalars
        pool += ["\"", "\\", "/", "\u{7F}", "\u{80}", "\u{A0}", "é", "ß", "Ω", "中", "日", "\u{2028}", "\u{2029}", "\u{FEFF}", "\u{FFFD}", "\u{FFFF}", "\u{10FFFF}"]
        pool += (0..<0x20).compactMap { Unicode.Scalar($0) }  // every control character
        pool += ["한", "국", "어", "가", "힣", "\u{1100}", "\u{1161}", "\u{11A8}"]  // Hangul syllables and conjoining jamo
        pool += ["😀", "👍", "🏽", "\u{200D}", "👩", "🇰", "🇷", "🏳", "\u{FE0F}", "\u{301}"]  // emoji parts, ZWJ, combining
        return pool
    }()

    static func string(rng: inout JSONTestRNG, maxLength: Int = 12, foundationSafe: Bool = false) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<rng.below(maxLength + 1) {
            if rng.below(4) == 0 {
                // Any Hangul syllable.
                scalars.append(Unicode.Scalar(UInt32(0xAC00 + rng.below(11172)))!)
            } else {
                let scalar = scalarPool[rng.below(scalarPool.count)]
                // Foundation drops a leading U+FEFF when it turns UTF-8 into a string.
                if foundationSafe && scalar == "\u{FEFF}" { continue }
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    static func double(rng: inout JSONTestRNG) -> Double {
        switch rng.below(6) {
        case 0: return Double(rng.below(2_000_001) - 1_000_000) / 100  // money-like
        case 1: return Double(rng.below(2000) - 1000)  // integral double
        case 2: return [0.1, -0.0, 0.0, 1e-7, 5e20, 1e300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .leastNormalMagnitude, 0.30000000000000004][rng.below(10)]
        default:
            while true {
                let d = Double(bitPattern: rng.next())
                if d.isFinite { return d }
            }
        }
    }

    static func int(rng: inout JSONTestRNG) -> Int {
        switch rng.below(4) {
        case 0: return [0, 1, -1, Int.max, Int.min, Int(Int32.max), 1 << 53, -(1 << 53) - 1][rng.below(8)]
        case 1: return Int(truncatingIfNeeded: rng.next())
        default: return rng.below(2001) - 1000
        }
    }

    /// A random JSON value nested up to `maxDepth`. With `foundationSafe`, avoids what Foundation
    /// does not carry faithfully: -0.0, and U+FEFF (which it strips from the start of strings).
    /// Where two values first differ, for readable failure messages.
    static func difference(_ a: JSON, _ b: JSON, path: String = "") -> String? {
        switch (a, b) {
        case (.array(let x), .array(let y)):
            if x.count != y.count { return "\(path): \(x.count) vs \(y.count) elements" }
            for (i, (p, q)) in zip(x, y).enumerated() {
                if let d = difference(p, q, path: path + "[\(i)]") { return d }
            }
            return nil
        case (.object(let x), .object(let y)):
            if Set(x.keys) != Set(y.keys) { return "\(path): keys \(x.keys.sorted().debugDescription) vs \(y.keys.sorted().debugDescription)" }
            for (k, v) in x {
                if let d = difference(v, y[k] ?? .null, path: path + "." + k.debugDescription) { return d }
            }
            return nil
        default:
            return a == b ? nil : "\(path): \(a) vs \(b)"
        }
    }

    /// Equality where an integer and a double match when the integer rounds to the double.
    /// Foundation reads "1.3982878180119196e+18" as the exact integer 1398287818011919600, which
    /// is the text's value but not the double's.
    static func looselyEqual(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.int(let i), .double(let d)), (.double(let d), .int(let i)): return Double(i) == d
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { looselyEqual($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { k, v in y[k].map { looselyEqual(v, $0) } ?? false }
        default: return a == b
        }
    }

    static func value(depth: Int, rng: inout JSONTestRNG, maxDepth: Int = 6, foundationSafe: Bool = false) -> JSON {
        let kinds = depth >= maxDepth ? 5 : 7
        switch rng.below(kinds) {
        case 0: return .null
        case 1: return .bool(rng.below(2) == 0)
        case 2: return .int(int(rng: &rng))
        case 3:
            let d = double(rng: &rng)
            return .double(foundationSafe && d == 0 ? 0 : d)
        case 4: return .string(string(rng: &rng, foundationSafe: foundationSafe))
        case 5:
            return .array((0..<rng.below(6)).map { _ in JSONFuzz.value(depth: depth + 1, rng: &rng, maxDepth: maxDepth, foundationSafe: foundationSafe) })
        default:
            var members: [String: JSON] = [:]
            for _ in 0..<rng.below(6) {
                members[string(rng: &rng, maxLength: 6, foundationSafe: foundationSafe)] = JSONFuzz.value(depth: depth + 1, rng: &rng, maxDepth: maxDepth, foundationSafe: foundationSafe)
            }
            return .object(members)
        }
    }
}

extension JSON {
    /// The equivalent Foundation object graph, for JSONSerialization.
    var fuzzFoundationObject: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let b): return NSNumber(value: b)
        case .int(let i): return NSNumber(value: i)
        case .double(let d): return NSNumber(value: d)
        case .string(let s): return s
        case .array(let a): return a.map(\.fuzzFoundationObject)
        case .object(let o): return o.mapValues(\.fuzzFoundationObject)
        }
    }
}

private func text(_ value: JSON) -> String { value.jsonString }

// MARK: - Writer tests

@Suite("JSONWriter")
struct JSONWriterTests {
    @Test func scalars() {
        #expect(text(.null) == "null")
        #expect(text(true) == "true")
        #expect(text(false) == "false")
        #expect(text(0) == "0")
        #expect(text(7) == "7")
        #expect(text(-7) == "-7")
        #expect(text(10) == "10")
        #expect(text(1234567890) == "1234567890")
        #expect(text(.int(Int.max)) == "9223372036854775807")
        #expect(text(.int(Int.min)) == "-9223372036854775808")
        #expect(text("") == "\"\"")
        #expect(text([]) == "[]")
        #expect(text([:]) == "{}")
    }

    @Test func doublesAreShortestAndValidJSON() throws {
        let cases: [(Double, String)] = [
            (1.0, "1.0"), (-1.5, "-1.5"), (0.1, "0.1"), (0.30000000000000004, "0.30000000000000004"),
            (1e-7, "1e-07"), (5e20, "5e+20"), (1e16, "1e+16"), (123456.789, "123456.789"),
            (-0.0, "-0.0"), (0.0, "0.0"), (.leastNonzeroMagnitude, "5e-324"),
            (.greatestFiniteMagnitude, "1.7976931348623157e+308"),
        ]
        for (value, expected) in cases {
            let written = text(.double(value))
            #expect(written == expected)
            // Reads back as the very same double (and Foundation agrees it is JSON).
            guard case .double(let back) = try JSON(parsing: written) else {
                Issue.record("\(written) did not parse as a double")
                continue
            }
            #expect(back.bitPattern == value.bitPattern)
            #expect(try JSONSerialization.jsonObject(with: Data(written.utf8), options: .fragmentsAllowed) is NSNumber)
        }
    }

    @Test func nonFiniteDoublesBecomeNull() {
        #expect(text(.double(.nan)) == "null")
        #expect(text(.double(.infinity)) == "null")
        #expect(text(.double(-.infinity)) == "null")
        #expect(text([.double(.nan), 1]) == "[null,1]")
    }

    @Test func stringEscaping() {
        #expect(text("plain") == #""plain""#)
        #expect(text("a\"b\\c/d") == #""a\"b\\c/d""#)
        #expect(text("\n\r\t\u{8}\u{C}") == #""\n\r\t\b\f""#)
        #expect(text("\u{0}\u{1}\u{1F}\u{7F}") == "\"\\u0000\\u0001\\u001f\u{7F}\"")
        #expect(text("한국어 😀 é \u{2028}") == "\"한국어 😀 é \u{2028}\"")
        #expect(text("\"") == #""\"""#)
        #expect(text("\\\\") == #""\\\\""#)
        // Every control character, one by one.
        let short: [UInt8: String] = [0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"]
        for byte in UInt8(0)..<0x20 {
            let s = String(UnicodeScalar(byte))
            let hex = String(byte, radix: 16)
            let expected = short[byte] ?? "\\u00" + (hex.count == 1 ? "0" + hex : hex)
            #expect(text(.string(s)) == "\"\(expected)\"")
            #expect(text(.string("ab" + s + "cd")) == "\"ab\(expected)cd\"")
        }
    }

    @Test func writeStringIsPublicForHandBuiltFrames() throws {
        let ops: JSON = [["op": "replace", "path": "/count", "value": 42]]
        let encodedOps = ops.encoded()
        var frame: [UInt8] = []
        frame.append(contentsOf: #"{"type":"patch","room":"#.utf8)
        JSONWriter.writeString("todo \"main\"", to: &frame)
        frame.append(contentsOf: #","from":"#.utf8)
        JSONWriter.writeInt(3, to: &frame)
        frame.append(contentsOf: #","ops":"#.utf8)
        frame.append(contentsOf: encodedOps)
        frame.append(UInt8(ascii: "}"))
        #expect(String(decoding: frame, as: UTF8.self) == #"{"type":"patch","room":"todo \"main\"","from":3,"ops":[{"op":"replace","path":"/count","value":42}]}"#)
        #expect(try JSON(parsing: frame) == ["type": "patch", "room": "todo \"main\"", "from": 3, "ops": ops])

        var raw: [UInt8] = []
        Array("a\tb".utf8).withUnsafeBufferPointer { JSONWriter.writeString(utf8: $0, to: &raw) }
        #expect(raw == Array(#""a\tb""#.utf8))
        var number: [UInt8] = []
        JSONWriter.writeDouble(2.5, to: &number)
        JSONWriter.writeInt(-10, to: &number)
        #expect(String(decoding: number, as: UTF8.self) == "2.5-10")
    }

    @Test func writeAppends() {
        var buffer = Array("prefix:".utf8)
        let small: JSON = ["a": 1]
        small.write(to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #"prefix:{"a":1}"#)
        #expect(JSON.array([1, "x"]).encoded() == Array(#"[1,"x"]"#.utf8))
    }

    @Test func compactNestedOutput() {
        let value: JSON = ["list": [1, 2.5, "three", nil, true, ["k": []]], "empty": [:]]
        #expect(text(value) == #"{"empty":{},"list":[1,2.5,"three",null,true,{"k":[]}]}"#)
    }

    @Test func keysSortedByUTF8Bytes() {
        let keys = ["b", "a", "B", "é", "z", "aa", "", "a\u{0}", "\u{FF61}", "😀", "_", "10", "9"]
        var members: [String: JSON] = [:]
        for (i, key) in keys.enumerated() { members[key] = .int(i) }
        let written = text(.object(members))
        let expectedOrder = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        // U+FF61 (EF BD A1) sorts before U+1F600 (F0 9F 98 80) by UTF-8, though not by UTF-16.
        #expect(expectedOrder.suffix(3) == ["é", "\u{FF61}", "😀"])
        var expected = "{"
        for (n, key) in expectedOrder.enumerated() {
            if n > 0 { expected += "," }
            var escapedKey: [UInt8] = []
            JSONWriter.writeString(key, to: &escapedKey)
            expected += String(decoding: escapedKey, as: UTF8.self) + ":" + String(keys.firstIndex(of: key)!)
        }
        expected += "}"
        #expect(written == expected)
        // Large objects take the other sort path.
        let many = JSON.object(Dictionary(uniqueKeysWithValues: (0..<100).map { ("k\($0)", JSON.int($0)) }))
        let manyKeys = (0..<100).map { "k\($0)" }.sorted()
        #expect(text(many) == "{" + manyKeys.map { "\"\($0)\":\($0.dropFirst())" }.joined(separator: ",") + "}")
    }

    @Test func deterministicAcrossInsertionOrders() {
        var rng = JSONTestRNG(seed: 99)
        for _ in 0..<50 {
            let pairs = (0..<rng.below(40)).map { i in (JSONFuzz.string(rng: &rng, maxLength: 5) + "\(i)", JSONFuzz.value(depth: 3, rng: &rng)) }
            var forward: [String: JSON] = [:]
            for (k, v) in pairs { forward[k] = v }
            var backward: [String: JSON] = Dictionary(minimumCapacity: 200)
            for (k, v) in pairs.reversed() { backward[k] = v }
            var shuffled: [String: JSON] = [:]
            for (k, v) in pairs.shuffled(using: &rng) { shuffled[k] = v }
            // Churn: insert extra keys and remove them again.
            for i in 0..<30 { shuffled["extra\(i)"] = .null }
            for i in 0..<30 { shuffled["extra\(i)"] = nil }
            let a = JSON.object(forward).encoded()
            #expect(JSON.object(backward).encoded() == a)
            #expect(JSON.object(shuffled).encoded() == a)
            #expect(JSON.array([.object(shuffled)]).encoded() == [UInt8(ascii: "[")] + a + [UInt8(ascii: "]")])
        }
    }

    @Test func randomValuesRoundTrip() throws {
        var rng = JSONTestRNG(seed: 2024)
        for _ in 0..<2_000 {
            let value = JSONFuzz.value(depth: 0, rng: &rng)
            let bytes = value.encoded()
            let parsed = try JSONParser().parse(bytes)
            #expect(parsed == value)
            // And the bytes are stable through a second round.
            #expect(parsed.encoded() == bytes)
        }
        for _ in 0..<500 {
            // Foundation accepts everything we write and reads back the same value.
            let value = JSONFuzz.value(depth: 0, rng: &rng, foundationSafe: true)
            let bytes = value.encoded()
            let object = try JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed)
            let again = try JSONSerialization.data(withJSONObject: object, options: .fragmentsAllowed)
            let fromFoundation = try JSONParser().parse(again)
            #expect(JSONFuzz.looselyEqual(fromFoundation, value), "\(JSONFuzz.difference(value, fromFoundation) ?? "")")
        }
    }

    @Test func jsonStringMatchesBytes() {
        let value: JSON = ["name": "홍길동", "n": 1]
        #expect(value.jsonString == String(decoding: value.encoded(), as: UTF8.self))
        #expect(value.jsonString == #"{"n":1,"name":"홍길동"}"#)
    }
}

extension JSON {
    var fuzzContainsNegativeZero: Bool {
        switch self {
        case .double(let d): return d == 0 && d.sign == .minus
        case .array(let a): return a.contains { $0.fuzzContainsNegativeZero }
        case .object(let o): return o.values.contains { $0.fuzzContainsNegativeZero }
        default: return false
        }
    }
}
