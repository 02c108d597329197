import Testing
import TetherTUI

@Suite struct KeyDecoderTests {
    private func decode(_ bytes: [UInt8]) -> [Key] {
        var decoder = KeyDecoder()
        return decoder.decode(bytes) + decoder.flush()
    }

    private func decode(_ text: String) -> [Key] { decode(Array(text.utf8)) }

    @Test func printableAndMultiByteCharacters() {
        #expect(decode("aZ ~") == [.char("a"), .char("Z"), .char(" "), .char("~")])
        #expect(decode("한글") == [.char("한"), .char("글")])
        #expect(decode("é😀") == [.char("é"), .char("😀")])
    }

    @Test func controlKeys() {
        #expect(decode([0x0D]) == [.enter])
        #expect(decode([0x0A]) == [.enter])
        #expect(decode([0x0D, 0x0A]) == [.enter])  // CR LF is one Enter
        #expect(decode([0x0D, 0x0D]) == [.enter, .enter])
        #expect(decode([0x09]) == [.tab])
        #expect(decode([0x7F]) == [.backspace])
        #expect(decode([0x08]) == [.backspace])
        #expect(decode([0x03]) == [.ctrl("c")])
        #expect(decode([0x01, 0x05, 0x15]) == [.ctrl("a"), .ctrl("e"), .ctrl("u")])
    }

    @Test(arguments: [
        ("\u{1B}[A", Key.up), ("\u{1B}[B", .down), ("\u{1B}[C", .right), ("\u{1B}[D", .left),
        ("\u{1B}OA", .up), ("\u{1B}OD", .left),
        ("\u{1B}[H", .home), ("\u{1B}[F", .end), ("\u{1B}OH", .home), ("\u{1B}OF", .end),
        ("\u{1B}[1~", .home), ("\u{1B}[4~", .end), ("\u{1B}[7~", .home), ("\u{1B}[8~", .end),
        ("\u{1B}[3~", .delete), ("\u{1B}[5~", .pageUp), ("\u{1B}[6~", .pageDown),
        ("\u{1B}[Z", .backTab), ("\u{1B}[1;5C", .right), ("\u{1B}[3;2~", .delete),
    ])
    func escapeSequences(sequence: String, key: Key) {
        #expect(decode(sequence) == [key])
    }

    @Test func escapeAlone() {
        var decoder = KeyDecoder()
        #expect(decoder.decode([0x1B]) == [])
        #expect(decoder.hasPending)
        #expect(decoder.flush() == [.escape])
        #expect(!decoder.hasPending)
        #expect(decode("\u{1B}\u{1B}[A") == [.escape, .up])
    }

    @Test func sequencesSplitAcrossReads() {
        let input = Array("a\u{1B}[3~한\u{1B}OH\u{1B}[5~b".utf8)
        let expected: [Key] = [.char("a"), .delete, .char("한"), .home, .pageUp, .char("b")]
        // Every way of cutting the input in two, and one byte at a time.
        for cut in 0...input.count {
            var decoder = KeyDecoder()
            let keys = decoder.decode(input[..<cut]) + decoder.decode(input[cut...])
            #expect(keys == expected, "cut at \(cut)")
        }
        var decoder = KeyDecoder()
        var keys: [Key] = []
        for byte in input { keys += decoder.decode([byte]) }
        #expect(keys == expected)
        #expect(!decoder.hasPending)
    }

    @Test func utf8SplitAcrossReads() {
        var decoder = KeyDecoder()
        let bytes = Array("가".utf8)
        #expect(decoder.decode(bytes[0..<1]) == [])
        #expect(decoder.decode(bytes[1..<2]) == [])
        #expect(decoder.decode(bytes[2..<3]) == [.char("가")])
    }

    @Test func garbageIsDroppedAndDecodingRecovers() {
        #expect(decode([0xFF, 0xC0, 0x80, 0x61]) == [.char("a")])
        #expect(decode([0xED, 0xA0, 0x80, 0x62]) == [.char("b")])  // a UTF-16 surrogate
        #expect(decode([0xE0, 0x80, 0x80, 0x63]) == [.char("c")])  // overlong
        #expect(decode([0xE2, 0x61]) == [.char("a")])  // cut character
        #expect(decode(Array("\u{1B}[1;2\u{1C}x".utf8)) == [.char("x")])  // broken sequence
        #expect(decode(Array("\u{1B}[99~\u{1B}[200~q".utf8)) == [.char("q")])  // unknown keys
        #expect(decode([0xE2, 0x82]) == [])  // cut at the end of input
    }

    @Test func longRunawaySequenceDoesNotGrowForever() {
        var decoder = KeyDecoder()
        _ = decoder.decode([0x1B, UInt8(ascii: "[")] + Array(repeating: UInt8(ascii: "1"), count: 1000))
        #expect(!decoder.hasPending)
        #expect(decoder.decode(Array("ok".utf8)) == [.char("o"), .char("k")])
    }

    @Test func randomBytesNeverCrash() {
        var generator = SystemRandomNumberGenerator()
        var decoder = KeyDecoder()
        for _ in 0..<2000 {
            let count = Int.random(in: 0...16, using: &generator)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = decoder.decode(bytes)
            if Bool.random(using: &generator) { _ = decoder.flush() }
        }
        _ = decoder.flush()
        #expect(decoder.decode(Array("\u{1B}[Aé".utf8)) == [.up, .char("é")])
    }
}
