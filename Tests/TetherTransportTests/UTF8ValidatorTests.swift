import Testing
@testable import TetherTransport
import TetherTestSupport

@Suite("TetherTransport: UTF8Validator")
struct UTF8ValidatorTests {
    /// The validator agrees with Swift's own decoder, whole and fed in two pieces split anywhere.
    @Test func agreesWithTheStandardLibraryOnRandomBytes() {
        var rng = SeededGenerator(seed: 3629)
        let alphabet: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                                 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...12, using: &rng)).map { _ in
                Bool.random(using: &rng) ? alphabet.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(bytes.withUnsafeBytes { UTF8Validator.isValid($0) } == expected, "\(bytes)")
            let cut = Int.random(in: 0...bytes.count, using: &rng)
            var validator = UTF8Validator()
            let pieces = bytes.withUnsafeBytes { whole in
                validator.consume(UnsafeRawBufferPointer(rebasing: whole[..<cut]))
                    && validator.consume(UnsafeRawBufferPointer(rebasing: whole[cut...]))
            }
            #expect((pieces && validator.isComplete) == expected, "\(bytes) cut at \(cut)")
        }
    }

    @Test func longASCIIRunsAndTheirEnds() {
        let text = Array(String(repeating: "abcdefgh", count: 9).utf8) + Array("é𝄞".utf8)
        #expect(text.withUnsafeBytes { UTF8Validator.isValid($0) })
        #expect(!(text.dropLast()).withUnsafeBytes { UTF8Validator.isValid($0) })
        #expect(!(Array(repeating: 0x61, count: 13) + [0xC0, 0xAF]).withUnsafeBytes { UTF8Validator.isValid($0) })
    }
}
