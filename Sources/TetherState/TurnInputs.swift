import FoundationEssentials

/// What one turn (an action, a timer tick, a reaction to presence) reads besides its arguments:
/// the time and random numbers, through `ViewModelContext.now` and `.random`. The first read in
/// a turn fixes the value for the turn; the room records what was read with the version step
/// (`TurnRecord`, in its history), and a replay of exported history hands the same values
/// back, so a ViewModel that reads them from its context replays exactly.
final class TurnInputs {
    typealias Record = TurnRecord

    /// The wall clock in milliseconds since 1970 (the server's clock: virtual in tests).
    var clock: () -> Int = { Int((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
    private var current = Record()
    private var generator: TurnRandom?
    /// Values a replay gives the next turn instead of reading the clock or drawing a seed.
    private var replayed: Record?

    var now: Date {
        if current.milliseconds == nil { current.milliseconds = replayed?.milliseconds ?? clock() }
        return Date(timeIntervalSince1970: Double(current.milliseconds!) / 1000)
    }

    var random: TurnRandom {
        if let generator { return generator }
        // 53 bits: a JSON number every reader (JavaScript too) keeps exactly.
        let seed = replayed?.seed ?? UInt64.random(in: 0..<(1 << 53))
        current.seed = seed
        let made = TurnRandom(seed: seed)
        generator = made
        return made
    }

    /// Ends the turn: what it read, and a clean slate for the next.
    func finish() -> Record {
        defer { current = Record(); generator = nil; replayed = nil }
        return current
    }

    /// The next turn reads these (a replay).
    func replay(_ record: Record) { replayed = record }
}

/// What a turn read from its context: the time (milliseconds since 1970) and the seed of its
/// random numbers, each nil when it read none.
public struct TurnRecord: Sendable, Equatable {
    public var milliseconds: Int?
    public var seed: UInt64?

    public init(milliseconds: Int? = nil, seed: UInt64? = nil) {
        self.milliseconds = milliseconds
        self.seed = seed
    }
}

/// Random numbers for one turn (`ViewModelContext.random`): SplitMix64 from the turn's seed.
/// `var random = context.random; let roll = Int.random(in: 1...6, using: &random)`.
public final class TurnRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    public func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
