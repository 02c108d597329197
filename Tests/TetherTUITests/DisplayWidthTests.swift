import Testing
@testable import TetherTUI

@Suite struct DisplayWidthTests {
    @Test(arguments: [
        ("a", 1), ("~", 1), ("é", 1), ("e\u{301}", 1), ("Ж", 1), ("─", 1), ("…", 1),
        ("가", 2), ("힣", 2), ("ㄱ", 2), ("\u{1100}\u{1161}\u{11A8}", 2),  // 각, as Jamo
        ("中", 2), ("あ", 2), ("カ", 2), ("Ａ", 2), ("　", 2), ("𠀀", 2),
        ("😀", 2), ("👍🏽", 2), ("👨‍👩‍👧", 2), ("🇰🇷", 2), ("❤️", 2), ("❤", 1), ("1️⃣", 2), ("⌚︎", 1),
        ("\u{301}", 0), ("\u{200B}", 0), ("\u{7}", 0), ("\u{1B}", 0), ("\r\n", 0), ("\u{85}", 0),
    ] as [(String, Int)])
    func graphemeWidth(text: String, width: Int) {
        #expect(text.count == 1, "test data must be one grapheme")
        #expect(Character(text).displayWidth == width)
    }

    @Test func stringWidth() {
        #expect("".displayWidth == 0)
        #expect("hello".displayWidth == 5)
        #expect("6자리 이상 비밀번호를 입력해주세요.".displayWidth == 35)
        #expect("日本語 text".displayWidth == 11)
    }

    /// The hand-kept table must agree with the standard library's emoji data. Lone regional
    /// indicators are the exception: East Asian Width calls them neutral, only pairs (flags) are wide.
    @Test func everyEmojiPresentationScalarIsWide() {
        var narrow: [String] = []
        for value in UInt32(0x2000)...UInt32(0x1FAFF) where !(0x1F1E6...0x1F1FF).contains(value) {
            guard let scalar = Unicode.Scalar(value), scalar.properties.isEmojiPresentation else { continue }
            if scalar.cellWidth != 2 { narrow.append(String(value, radix: 16)) }
        }
        #expect(narrow.isEmpty, "narrow emoji: \(narrow)")
    }

    @Test func wholeBlocksAreWide() {
        for range in [0xAC00...0xD7A3, 0x4E00...0x9FFF, 0x3041...0x3096, 0x30A1...0x30FA, 0xFF01...0xFF60] as [ClosedRange<UInt32>] {
            for value in range {
                #expect(Unicode.Scalar(value)!.cellWidth == 2, "U+\(String(value, radix: 16))")
            }
        }
    }

    @Test func combiningMarksAreZeroWidth() {
        for value in UInt32(0x0300)...UInt32(0x036F) {
            #expect(Unicode.Scalar(value)!.cellWidth == 0)
        }
        #expect(Unicode.Scalar(0x3099)!.cellWidth == 0)  // kana voiced mark inside a wide block
    }

    @Test func truncate() {
        #expect("hello world".truncated(toWidth: 5) == "hello")
        #expect("hello world".truncated(toWidth: 6, ellipsis: "…") == "hello…")
        #expect("hello".truncated(toWidth: 5, ellipsis: "…") == "hello")
        #expect("가나다라".truncated(toWidth: 5) == "가나")  // a wide char is never cut in half
        #expect("가나다라".truncated(toWidth: 5, ellipsis: "…") == "가나…")
        #expect("가나다라".truncated(toWidth: 4, ellipsis: "…") == "가…")
        #expect("abc".truncated(toWidth: 0, ellipsis: "…") == "")
    }

    @Test func pad() {
        #expect("ab".padded(toWidth: 5) == "ab   ")
        #expect("ab".padded(toWidth: 5, alignment: .right) == "   ab")
        #expect("ab".padded(toWidth: 5, alignment: .center) == " ab  ")
        #expect("가나다".padded(toWidth: 5) == "가나 ")
        #expect("가나다".padded(toWidth: 5).displayWidth == 5)
    }

    @Test func wrap() {
        #expect("the quick brown fox".wrapped(toWidth: 10) == ["the quick", "brown fox"])
        #expect("abcdefghij".wrapped(toWidth: 4) == ["abcd", "efgh", "ij"])
        #expect("한국어 문장을 나눕니다".wrapped(toWidth: 8) == ["한국어", "문장을", "나눕니다"])
        #expect("a\nb".wrapped(toWidth: 4) == ["a", "b"])
        for line in "6자리 이상 비밀번호를 입력해주세요.".wrapped(toWidth: 7) {
            #expect(line.displayWidth <= 7)
        }
    }
}
