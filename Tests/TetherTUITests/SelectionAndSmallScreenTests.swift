import Testing
import TetherTUI

@MainActor
@Suite struct KeyedSelectionTests {
    private func lines(_ keys: [String]) -> [Line] { keys.map { Line("item \($0)") } }

    private func list(_ keys: [String], selecting key: String) -> ListView {
        let list = ListView()
        list.setItems(lines(keys), keys: keys)
        #expect(list.select(key: key))
        return list
    }

    @Test func theSelectionFollowsItsItemAcrossRemovesAndInsertsBeforeIt() {
        let list = list(["a", "b", "c", "d"], selecting: "c")
        list.setItems(lines(["b", "c", "d"]), keys: ["b", "c", "d"])  // a removed
        #expect(list.selectedKey == "c" && list.selectedIndex == 1)
        list.setItems(lines(["x", "y", "b", "c", "d"]), keys: ["x", "y", "b", "c", "d"])  // two inserted before
        #expect(list.selectedKey == "c" && list.selectedIndex == 3)
    }

    @Test func aRemovedSelectedItemHandsTheSelectionToItsNeighbour() {
        let list = list(["a", "b", "c", "d"], selecting: "b")
        list.setItems(lines(["a", "c", "d"]), keys: ["a", "c", "d"])
        #expect(list.selectedKey == "c", "the next item takes its place")
        #expect(list.select(key: "d"))
        list.setItems(lines(["a", "c"]), keys: ["a", "c"])
        #expect(list.selectedKey == "c", "the last item gone: the one before it")
        // A whole new list (a snapshot) where the selected item and its next neighbour are gone.
        let next = ListView()
        next.setItems(lines(["a", "b", "c", "d", "e"]), keys: ["a", "b", "c", "d", "e"])
        next.select(key: "c")
        next.setItems(lines(["e", "a"]), keys: ["e", "a"])
        #expect(next.selectedKey == "e")
        next.setItems([], keys: [])
        #expect(next.selectedIndex == nil)
    }

    @Test func plainItemsKeepTheRowNumber() {
        let list = ListView(items: ["a", "b", "c"])
        list.selectedIndex = 1
        list.items = ["x", "y", "z"]
        #expect(list.selectedIndex == 1)
        #expect(list.keys == nil && list.selectedKey == nil)
    }
}

@MainActor
@Suite struct SmallScreenTests {
    @Test func aLabelCanKeepTheEndOfItsText() {
        let label = Label("12345678901234567890", alignment: .right, truncation: .head)
        let (_, screen) = show(label, width: 8, height: 1)
        #expect(screen.lines == ["…4567890"])
        label.truncation = .tail
        let (_, tail) = show(label, width: 8, height: 1)
        #expect(tail.lines == ["1234567…"])
        #expect("한글abc".truncatedFromStart(toWidth: 4, ellipsis: "…") == "…abc")
    }

    @Test func bigTextFallsBackToPlainTextWhenItDoesNotFit() {
        let (_, big) = show(BigText("42"), width: 20, height: 7)
        #expect(big.lines[1].contains("██  ██"), "centered: one blank row above")
        let (_, low) = show(BigText("42"), width: 20, height: 3)
        #expect(low.lines == ["                    ", "         42         ", "                    "])
        let (_, narrow) = show(BigText("12345"), width: 10, height: 5)
        #expect(narrow.lines[2] == "  12345   ")
        let (_, text) = show(BigText("waiting"), width: 40, height: 5)
        #expect(text.lines[2].contains("waiting"), "letters have no glyphs: plain text")
    }

    @Test func aBoxGivesUpItsBorderBelowAMinimumSize() {
        let box = Box(title: "T", Label("hi"))
        box.borderlessBelow = Size(width: 10, height: 4)
        let (_, roomy) = show(box, width: 10, height: 4)
        #expect(roomy.lines[0].hasPrefix("┌─ T ─"))
        let (_, small) = show(box, width: 10, height: 3)
        #expect(small.lines == ["hi        ", "          ", "          "])
    }

    @Test func hintsGiveWayButQuitStays() {
        let hints = HintBar(["+ / - change the count", "Enter presses the focused button", "Tab focus"], pinned: ["q quit"])
        #expect(hints.text(width: 80) == "+ / - change the count · Enter presses the focused button · Tab focus · q quit")
        #expect(hints.text(width: 40) == "+ / - change the count · q quit")
        #expect(hints.text(width: 20) == "q quit")
        let (_, screen) = show(hints, width: 36, height: 1)
        #expect(screen.lines == ["+ / - change the count · q quit     "])
        #expect(screen.style(x: 0, y: 0).dim)
    }

    @Test func tabSkipsWidgetsTheLayoutLeftNoRoomFor() {
        let first = Button("one"), second = Button("two"), third = Button("three")
        let (app, _) = show(Stack(.horizontal, spacing: 1, [first, second, third]), width: 14, height: 1)
        #expect(app.focused === first)
        app.handle(.tab)
        #expect(app.focused === second)
        app.handle(.tab)
        #expect(app.focused === first, "three got no cells, so Tab goes round")
    }

    @Test func arrowKeysMoveOnAKeypad() {
        let keys = [["7", "8", "9"], ["4", "5", "6"], ["0", "="]].map { $0.map { Button($0) } }
        let pad = Stack(.vertical, keys.map { Stack(.horizontal, spacing: 1, $0) })
        pad.arrowKeysMoveFocus = true
        let (app, _) = show(pad, width: 20, height: 3)
        #expect(app.focused === keys[0][0])
        app.handle(.right)
        app.handle(.right)
        #expect(app.focused === keys[0][2])
        app.handle(.right)  // nothing further right: stays
        #expect(app.focused === keys[0][2])
        app.handle(.down)
        #expect(app.focused === keys[1][2])
        app.handle(.down)  // no third column on the last row: the nearest key
        #expect(app.focused === keys[2][1])
        app.handle(.left)
        app.handle(.up)
        #expect(app.focused === keys[1][0])
    }

    @Test func collapsibleChildrenGiveWaySoTheRestStaysVisible() {
        let big = BigText("42")
        let count = Label("count: 42")
        let buttons = Label("[ + ]")
        let stack = Stack(.vertical, spacing: 1, [big, count, buttons])
        stack.setCollapsible(big)
        let (_, roomy) = show(stack, width: 20, height: 9)
        #expect(roomy.lines[0].contains("██") && roomy.lines[6] == "count: 42".padded(toWidth: 20) && roomy.lines[8].hasPrefix("[ + ]"))
        let (app, low) = show(stack, width: 20, height: 6)
        #expect(low.lines[0].hasPrefix("count: 42") && low.lines[2].hasPrefix("[ + ]"), "\(low.lines)")
        #expect(!low.lines.contains { $0.contains("█") })
        #expect(big.isSqueezedOut && app.focusableWidgets.isEmpty)
    }

    @Test func anEqualValueDrawsNothing() {
        let label = Label("same")
        let (app, _) = show(label, width: 6, height: 1)
        #expect(!app.needsRedraw)
        label.text = "same"
        #expect(!app.needsRedraw)
        label.text = "new"
        #expect(app.needsRedraw)
    }
}
