import TetherJSON

/// A small, fast, seedable generator (SplitMix64) so property tests are reproducible: a failing
/// case prints its seed, and the same seed replays it.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension JSON {
    /// A random JSON value up to `depth` levels of nesting, with strings drawn from ASCII,
    /// escapes, control characters, Hangul, CJK and emoji.
    public static func random(using rng: inout SeededGenerator, depth: Int = 4) -> JSON {
        let scalarOnly = depth <= 0
        switch Int.random(in: 0..<(scalarOnly ? 5 : 7), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int.random(in: -1_000_000...1_000_000, using: &rng))
        case 3: return .double(Double(Int.random(in: -100_000...100_000, using: &rng)) / 64)
        case 4: return .string(randomString(using: &rng))
        case 5:
            let count = Int.random(in: 0...4, using: &rng)
            return .array((0..<count).map { _ in random(using: &rng, depth: depth - 1) })
        default:
            let count = Int.random(in: 0...4, using: &rng)
            var object: [String: JSON] = [:]
            for _ in 0..<count { object[randomKey(using: &rng)] = random(using: &rng, depth: depth - 1) }
            return .object(object)
        }
    }

    private static let alphabet: [String] = ["a", "b", "z", "0", " ", "\"", "\\", "/", "~", "\n", "\t", "\u{1}", "é", "한", "글", "中", "🙂", "👩‍💻"]

    public static func randomString(using rng: inout SeededGenerator, maxLength: Int = 8) -> String {
        let length = Int.random(in: 0...maxLength, using: &rng)
        return (0..<length).map { _ in alphabet.randomElement(using: &rng)! }.joined()
    }

    /// Keys include "~" and "/" so JSON Pointer escaping is exercised.
    public static func randomKey(using rng: inout SeededGenerator) -> String {
        ["a", "b", "c", "id", "a/b", "m~n", "", "키", "~1"].randomElement(using: &rng)!
    }
}
