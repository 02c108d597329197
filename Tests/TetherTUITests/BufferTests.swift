import Testing
import TetherTUI

@Suite struct BufferTests {
    @Test func wideCharacterTakesTwoCells() {
        var buffer = Buffer(width: 6, height: 1)
        let end = buffer.write("a가b", x: 0, y: 0)
        #expect(end == 4)
        #expect(buffer[0, 0].symbol == "a")
        #expect(buffer[1, 0].symbol == "가")
        #expect(buffer[2, 0].isContinuation)
        #expect(buffer[3, 0].symbol == "b")
        #expect(buffer.lines == ["a가b  "])
    }

    @Test func overwritingTheRightHalfBlanksTheLeftHalf() {
        var buffer = Buffer(width: 4, height: 1)
        buffer.write("가나", x: 0, y: 0)
        buffer.put("x", x: 1, y: 0)
        #expect(buffer.lines == [" x나"])
        #expect(!buffer[2, 0].isContinuation)
    }

    @Test func overwritingTheLeftHalfBlanksTheRightHalf() {
        var buffer = Buffer(width: 4, height: 1)
        buffer.write("가나", x: 0, y: 0)
        buffer.put("x", x: 2, y: 0)
        #expect(buffer.lines == ["가x "])
        #expect(!buffer[3, 0].isContinuation)
    }

    @Test func wideOverWideShiftedByOne() {
        var buffer = Buffer(width: 6, height: 1)
        buffer.write("가나다", x: 0, y: 0)
        buffer.put("한", x: 1, y: 0)
        #expect(buffer.lines == [" 한 다"])
        for x in 0..<6 where buffer[x, 0].isContinuation {
            #expect(buffer[x - 1, 0].symbol.first!.displayWidth == 2)
        }
    }

    @Test func wideCharacterIsNotDrawnHalfAtTheEdge() {
        var buffer = Buffer(width: 5, height: 1)
        let end = buffer.write("ab가나", x: 0, y: 0)
        #expect(end == 4)
        #expect(buffer.lines == ["ab가 "])
        #expect(!buffer[4, 0].isContinuation)

        var clipped = Buffer(width: 10, height: 1)
        clipped.write("가나다", x: 0, y: 0, limit: 3)
        #expect(clipped.lines == ["가        "])
    }

    @Test func controlCharactersAreNotDrawn() {
        var buffer = Buffer(width: 5, height: 1)
        buffer.write("a\u{7}\tb\u{1B}c", x: 0, y: 0)
        #expect(buffer.lines == ["abc  "])
    }

    @Test func fillAndStyle() {
        var buffer = Buffer(width: 3, height: 2)
        buffer.fill(Rect(x: 1, y: 0, width: 5, height: 5), symbol: "#", style: Style(fg: .red))
        #expect(buffer.lines == [" ##", " ##"])
        #expect(buffer[2, 1].style.fg == .red)
        buffer.applyStyle(Style(bold: true), to: Rect(x: 0, y: 0, width: 2, height: 1))
        #expect(buffer[1, 0].style == Style(fg: .red, bold: true))
        #expect(buffer[0, 0].style == Style(bold: true))
    }

    @Test func styledLineTruncationKeepsSpanStyles() {
        let line = Line([Span("ab", style: Style(fg: .red)), Span("cdef", style: Style(fg: .blue))])
        let cut = line.truncated(toWidth: 4)
        #expect(cut.text == "abc…")
        #expect(cut.spans[0].style.fg == .red)
        #expect(cut.spans[1].style.fg == .blue)
    }
}

@Suite struct LayoutTests {
    let area = Rect(x: 0, y: 0, width: 10, height: 20)

    @Test func lengthsAndFill() {
        let rects = area.split(.vertical, [.length(3), .fill(), .length(2)])
        #expect(rects.map(\.height) == [3, 15, 2])
        #expect(rects.map(\.y) == [0, 3, 18])
        #expect(rects.allSatisfy { $0.width == 10 && $0.x == 0 })
    }

    @Test func fillWeightsAreRatios() {
        let rects = Rect(x: 2, y: 1, width: 30, height: 1).split(.horizontal, [.fill(1), .fill(2)])
        #expect(rects.map(\.width) == [10, 20])
        #expect(rects.map(\.x) == [2, 12])
    }

    @Test func minimumGrowsAndSpacing() {
        let rects = area.split(.vertical, [.min(4), .length(2), .fill()], spacing: 1)
        // 20 - 2 gaps = 18; fixed 6; 12 left shared by min and fill.
        #expect(rects.map(\.height) == [10, 2, 6])
        #expect(rects.map(\.y) == [0, 11, 14])
    }

    @Test func notEnoughRoomServesFixedLengthsInOrder() {
        let rects = Rect(x: 0, y: 0, width: 5, height: 1).split(.horizontal, [.length(3), .length(4), .fill()])
        #expect(rects.map(\.width) == [3, 2, 0])
    }

    @Test func roundingHandsOutEveryCell() {
        let rects = Rect(x: 0, y: 0, width: 10, height: 1).split(.horizontal, [.fill(), .fill(), .fill()])
        #expect(rects.map(\.width).reduce(0, +) == 10)
        #expect(rects.map(\.width) == [3, 3, 4])
    }
}
