import Testing
import TetherTUI

@MainActor
@Suite struct LabelTests {
    @Test func multiLineAndAlignment() {
        let (_, screen) = show(Label("Hello\nWorld!"), width: 8, height: 3)
        #expect(screen.lines == ["Hello   ", "World!  ", "        "])

        let (_, centered) = show(Label("ab", alignment: .center), width: 6, height: 1)
        #expect(centered.lines == ["  ab  "])
        let (_, right) = show(Label("ab", alignment: .right), width: 6, height: 1)
        #expect(right.lines == ["    ab"])
    }

    @Test func tooLongEndsWithEllipsis() {
        let (_, screen) = show(Label("Hello, world"), width: 8, height: 1)
        #expect(screen.lines == ["Hello, …"])
    }

    @Test func wrapping() {
        let (_, screen) = show(Label("one two three", wraps: true), width: 7, height: 3)
        #expect(screen.lines == ["one two", "three  ", "       "])
    }

    @Test func styleCoversTheArea() {
        let (_, screen) = show(Label("x", style: Style(fg: .green, bold: true)), width: 3, height: 1)
        #expect(screen.style(x: 0, y: 0) == Style(fg: .green, bold: true))
        #expect(screen.style(x: 2, y: 0) == Style(fg: .green, bold: true))
    }

    @Test func koreanLabelInsideABoxKeepsTheBorderAligned() {
        let sentence = "6자리 이상 비밀번호를 입력해주세요."
        let box = Box(title: "비밀번호", Label(sentence))
        let (_, screen) = show(box, width: 39, height: 3)
        #expect(screen.lines == [
            "┌─ 비밀번호 " + String(repeating: "─", count: 26) + "┐",
            "│" + sentence + "  │",
            "└" + String(repeating: "─", count: 37) + "┘",
        ])
        for line in screen.lines { #expect(line.displayWidth == 39) }

        // Narrower than the sentence: cut with an ellipsis, never half a syllable.
        let (_, narrow) = show(Box(title: "비밀번호", Label(sentence)), width: 20, height: 3)
        #expect(narrow.lines[1] == "│6자리 이상 비밀번…│")
        // Odd width: the cut falls in the middle of a syllable, so a space pads it.
        let (_, odd) = show(Box(Label(sentence)), width: 21, height: 3)
        #expect(odd.lines[1] == "│6자리 이상 비밀번… │")
        let (_, odder) = show(Box(Label("가나다라마바")), width: 10, height: 3)
        #expect(odder.lines[1] == "│가나다… │")
        for line in narrow.lines + odd.lines + odder.lines {
            #expect(line.hasSuffix("│") || line.hasSuffix("┐") || line.hasSuffix("┘"))
        }
        #expect(narrow.lines.allSatisfy { $0.displayWidth == 20 })
        #expect(odd.lines.allSatisfy { $0.displayWidth == 21 })
        #expect(odder.lines.allSatisfy { $0.displayWidth == 10 })
    }

    @Test func wrappedKoreanInABox() {
        let box = Box(title: "안내", Label("6자리 이상 비밀번호를 입력해주세요.", wraps: true))
        let (_, screen) = show(box, width: 16, height: 5)
        #expect(screen.lines == [
            "┌─ 안내 ───────┐",
            "│6자리 이상    │",
            "│비밀번호를    │",
            "│입력해주세요. │",
            "└──────────────┘",
        ])
    }

    @Test func bigClock() {
        let (_, screen) = show(BigText("12:34"), width: 30, height: 5)
        #expect(screen.lines == [
            "  ██   ██████    ██████ ██  ██",
            "████       ██ ██     ██ ██  ██",
            "  ██   ██████    ██████ ██████",
            "  ██   ██     ██     ██     ██",
            "██████ ██████    ██████     ██",
        ])
        #expect(BigText("12:34:56").preferredLength(.horizontal, cross: 5) == 47)
    }
}

@MainActor
@Suite struct TextFieldTests {
    @Test func typingHangulKeepsTheCursorInTheRightCell() {
        let field = TextField()
        let (app, screen) = show(Stack(.vertical, [Label("Name"), field]), width: 12, height: 2)
        #expect(app.focused === field)
        #expect(screen.cursor == Point(x: 0, y: 1))

        for key in [Key.char("한"), .char("글")] { app.handle(key) }
        app.redraw()
        #expect(field.text == "한글")
        #expect(field.cursorIndex == 2)
        #expect(field.cursorColumn == 4)
        #expect(screen.lines[1] == "한글        ")
        #expect(screen.cursor == Point(x: 4, y: 1))

        app.handle(.left)
        app.redraw()
        #expect(screen.cursor == Point(x: 2, y: 1))
        app.handle(.char("a"))
        app.redraw()
        #expect(field.text == "한a글")
        #expect(screen.cursor == Point(x: 3, y: 1))
        #expect(screen.lines[1] == "한a글       ")
    }

    @Test func editingKeys() {
        let field = TextField(text: "hello")
        let (app, _) = show(field, width: 20, height: 1)
        #expect(field.cursorIndex == 5)
        app.handle(.backspace)
        #expect(field.text == "hell")
        app.handle(.home)
        app.handle(.delete)
        #expect(field.text == "ell")
        #expect(field.cursorIndex == 0)
        app.handle(.backspace)  // nothing before the cursor
        #expect(field.text == "ell")
        app.handle(.right)
        app.handle(.char("X"))
        #expect(field.text == "eXll")
        app.handle(.end)
        app.handle(.delete)  // nothing after the cursor
        #expect(field.text == "eXll")
        #expect(field.cursorIndex == 4)
        app.handle(.left)
        app.handle(.ctrl("k"))
        #expect(field.text == "eXl")
        app.handle(.ctrl("u"))
        #expect(field.text == "")
    }

    @Test func maskedShowsOneDotPerCharacter() {
        let field = TextField(text: "비밀pw", isMasked: true)
        let (_, screen) = show(field, width: 8, height: 1)
        #expect(screen.lines == ["••••    "])
        #expect(screen.cursor == Point(x: 4, y: 0))
        #expect(field.cursorColumn == 4)
        field.maskCharacter = "*"
        field.isMasked = true
        let (_, stars) = show(field, width: 8, height: 1)
        #expect(stars.lines == ["****    "])
    }

    @Test func placeholderWhenEmpty() {
        let (_, screen) = show(TextField(placeholder: "email"), width: 8, height: 1)
        #expect(screen.lines == ["email   "])
        #expect(screen.style(x: 0, y: 0).dim)
        #expect(screen.cursor == Point(x: 0, y: 0))
    }

    @Test func longTextScrollsToKeepTheCursorVisible() {
        let field = TextField()
        let (app, screen) = show(field, width: 5, height: 1)
        for c in "abcdefgh" { app.handle(.char(c)) }
        app.redraw()
        #expect(screen.lines == ["efgh "])
        #expect(screen.cursor == Point(x: 4, y: 0))
        app.handle(.home)
        app.redraw()
        #expect(screen.lines == ["abcde"])
        #expect(screen.cursor == Point(x: 0, y: 0))

        // Wide characters: the window moves by whole syllables.
        field.text = ""
        for c in "가나다라" { app.handle(.char(c)) }
        app.redraw()
        #expect(screen.lines == ["다라 "])
        #expect(screen.cursor == Point(x: 4, y: 0))
    }

    @Test func handlersRunForUserEditsAndSubmit() async {
        let field = TextField()
        var changes: [String] = []
        var submitted: [String] = []
        field.onChange { changes.append($0) }.onSubmit { submitted.append($0) }
        let (app, _) = show(field, width: 10, height: 1)
        app.handle(.char("h"))
        app.handle(.char("i"))
        app.handle(.backspace)
        app.handle(.enter)
        field.text = "set by a binding"  // not an edit: no onChange
        await app.settle()
        #expect(changes == ["h", "hi", "h"])
        #expect(submitted == ["h"])
    }

    @Test func textSetFromCodeKeepsAnEndCursorAtTheEnd() {
        let field = TextField(text: "abc")
        #expect(field.cursorIndex == 3)
        field.text = "abcdef"
        #expect(field.cursorIndex == 6)
        field.cursorIndex = 1
        field.text = "xyz123"
        #expect(field.cursorIndex == 1)
        field.text = ""
        #expect(field.cursorIndex == 0)
    }
}

@MainActor
@Suite struct ButtonTests {
    @Test func enabledDisabledAndFocusStyles() {
        let ok = Button("OK")
        let off = Button("Off", isEnabled: false)
        let (app, screen) = show(Stack(.vertical, [ok, off]), width: 10, height: 2)
        #expect(screen.lines == ["[ OK ]    ", "[ Off ]   "])
        #expect(app.focused === ok)
        #expect(screen.style(x: 0, y: 0).reverse)
        #expect(screen.style(x: 0, y: 0).bold)
        #expect(!screen.style(x: 6, y: 0).reverse)  // only the face is highlighted
        #expect(screen.style(x: 0, y: 1).dim)
        #expect(!screen.style(x: 0, y: 1).reverse)

        app.handle(.tab)
        app.redraw()
        #expect(app.focused === off)
        #expect(screen.style(x: 0, y: 0) == .plain)
        #expect(screen.style(x: 0, y: 1).dim)
        #expect(screen.style(x: 0, y: 1).underline)
        #expect(!screen.style(x: 0, y: 1).reverse)
    }

    @Test func enterActivatesOnlyAnEnabledButton() async {
        var presses = 0
        let button = Button("Go", isEnabled: false).onPress { presses += 1 }
        let (app, screen) = show(button, width: 10, height: 1)
        app.handle(.enter)
        await app.settle()
        #expect(presses == 0)
        #expect(!button.press())

        button.isEnabled = true
        app.redraw()
        #expect(!screen.style(x: 0, y: 0).dim)
        app.handle(.enter)
        app.handle(.char(" "))
        await app.settle()
        #expect(presses == 2)
    }

    @Test func thrownErrorGoesToTheErrorHandler() async {
        let button = Button("Fail").onPress { throw TestError(message: "server said no") }
        let status = StatusBar(connection: .live)
        let (app, screen) = show(Stack(.vertical, [button, status]), width: 40, height: 2)
        app.onError = { status.message = .error(($0 as? TestError)?.message ?? "?") }
        app.handle(.enter)
        await app.settle()
        #expect(app.lastError as? TestError == TestError(message: "server said no"))
        app.redraw()
        #expect(screen.lines[1] == "● live │ server said no".padded(toWidth: 40))
        #expect(screen.style(x: 9, y: 1).fg == .red)
    }
}

@MainActor
@Suite struct ListViewTests {
    private func items(_ n: Int) -> [String] { (0..<n).map { "item \($0)" } }

    @Test func selectionScrollsIntoView() {
        let list = ListView(items: items(10))
        let (app, screen) = show(list, width: 8, height: 3)
        #expect(list.selectedIndex == 0)
        #expect(screen.lines == ["item 0  ", "item 1  ", "item 2  "])
        #expect(screen.style(x: 0, y: 0).reverse)
        #expect(screen.style(x: 7, y: 0).reverse)  // the whole row
        #expect(!screen.style(x: 0, y: 1).reverse)

        for _ in 0..<4 { app.handle(.down) }
        app.redraw()
        #expect(list.selectedIndex == 4)
        #expect(screen.lines == ["item 2  ", "item 3  ", "item 4  "])
        #expect(screen.style(x: 0, y: 2).reverse)

        app.handle(.up)
        app.handle(.up)
        app.handle(.up)
        app.redraw()
        #expect(list.selectedIndex == 1)
        #expect(screen.lines == ["item 1  ", "item 2  ", "item 3  "])

        app.handle(.pageDown)
        app.redraw()
        #expect(list.selectedIndex == 4)
        app.handle(.end)
        app.redraw()
        #expect(list.selectedIndex == 9)
        #expect(screen.lines == ["item 7  ", "item 8  ", "item 9  "])
        app.handle(.down)  // stays at the end
        app.handle(.pageUp)
        app.redraw()
        #expect(list.selectedIndex == 6)
        app.handle(.home)
        app.redraw()
        #expect(list.selectedIndex == 0)
        #expect(screen.lines.first == "item 0  ")
    }

    @Test func shrinkingItemsClampsTheSelection() {
        let list = ListView(items: items(10))
        list.selectedIndex = 8
        list.items = ["only"]
        #expect(list.selectedIndex == 0)
        list.items = []
        #expect(list.selectedIndex == nil)
        #expect(!list.acceptsFocus)
    }

    @Test func unfocusedSelectionIsBoldNotReversed() {
        let list = ListView(items: items(3))
        let (app, screen) = show(Stack(.vertical, [TextField(), list]), width: 8, height: 4)
        #expect(app.focused !== list)
        #expect(screen.style(x: 0, y: 1).bold)
        #expect(!screen.style(x: 0, y: 1).reverse)
    }

    @Test func readOnlyLogFollowsTheEnd() {
        let log = ListView(items: items(5), isSelectable: false)
        log.followsEnd = true
        let (app, screen) = show(log, width: 6, height: 2)
        #expect(app.focused == nil)
        #expect(screen.lines == ["item 3", "item 4"])
        log.items += ["item 5"]
        app.redraw()
        #expect(screen.lines == ["item 4", "item 5"])
    }

    @Test func enterReportsTheSelection() async {
        var chosen: [Int] = []
        let list = ListView(items: items(3)).onSelect { chosen.append($0) }
        let (app, _) = show(list, width: 8, height: 3)
        app.handle(.down)
        app.handle(.enter)
        await app.settle()
        #expect(chosen == [1])
    }

    @Test func styledLines() {
        let list = ListView([Line([Span("key", style: Style(fg: .blue)), Span(": 1")])], isSelectable: false)
        let (_, screen) = show(list, width: 10, height: 1)
        #expect(screen.lines == ["key: 1    "])
        #expect(screen.style(x: 0, y: 0).fg == .blue)
        #expect(screen.style(x: 3, y: 0).fg == nil)
    }
}

@MainActor
@Suite struct GaugeAndStatusBarTests {
    @Test func gauge() {
        let gauge = Gauge(ratio: 0.5)
        let (app, screen) = show(gauge, width: 14, height: 1)
        #expect(screen.lines == ["█████░░░░░ 50%"])
        #expect(screen.style(x: 0, y: 0).fg == .cyan)
        gauge.ratio = 0.55
        app.redraw()
        #expect(screen.lines == ["█████▌░░░░ 55%"])
        gauge.ratio = 7
        gauge.label = "done"
        app.redraw()
        #expect(gauge.ratio == 1)
        #expect(screen.lines == ["█████████ done"])
        gauge.ratio = 0
        app.redraw()
        #expect(screen.lines == ["░░░░░░░░░ done"])
        gauge.ratio = 0.29
        gauge.label = nil
        #expect(gauge.displayedLabel == "29%")
    }

    @Test func statusBar() {
        let bar = StatusBar(connection: .live, room: "signin")
        bar.version = 12
        bar.latency = .milliseconds(34)
        bar.message = .info("resynced from snapshot")
        let (app, screen) = show(bar, width: 60, height: 1)
        #expect(screen.lines == ["● live │ room signin │ v12 │ 34 ms │ resynced from snapshot".padded(toWidth: 60)])
        #expect(screen.style(x: 0, y: 0).fg == .green)
        #expect(screen.style(x: 2, y: 0).fg == .green)

        bar.connection = .reconnecting
        bar.latency = .microseconds(3400)
        bar.message = nil
        app.redraw()
        #expect(screen.lines == ["● reconnecting │ room signin │ v12 │ 3.4 ms".padded(toWidth: 60)])
        #expect(screen.style(x: 0, y: 0).fg == .magenta)

        let (_, narrow) = show(StatusBar(connection: .disconnected, room: "a-very-long-room-name"), width: 20, height: 1)
        #expect(narrow.lines == ["● disconnected │ ro…"])
        #expect(narrow.style(x: 0, y: 0).fg == .red)
    }

    /// A message too long for a row of its own wraps onto a second (a reason for reconnecting was
    /// cut at 80 columns), never more.
    @Test func aLongMessageWrapsOnTwoRows() {
        let bar = StatusBar(connection: .reconnecting, room: "todo")
        bar.message = .error("nothing answers at 127.0.0.1:1 (connection refused or host unreachable)")
        #expect(bar.rows(width: 40).map(\.text) == ["● reconnecting │ room todo", "nothing answers at 127.0.0.1:1", "(connection refused or host unreachable)"])
        bar.message = .error(String(repeating: "word ", count: 40))
        #expect(bar.rows(width: 40).count == 3)
    }

    @Test func connectionColorsDiffer() {
        let states: [StatusBar.Connection] = [.connecting, .live, .reconnecting, .resynced, .disconnected]
        #expect(Set(states.map(\.color)).count == states.count)
    }
}

@MainActor
@Suite struct StackTests {
    @Test func verticalStackSizes() {
        let title = Label("Title")
        let field = TextField()
        let list = ListView(items: ["a", "b"])
        let status = StatusBar()
        let root = Stack(.vertical, [title, field])
        root.add(list, size: .fill())
        root.add(status)
        _ = show(root, width: 20, height: 8)
        #expect(title.frame == Rect(x: 0, y: 0, width: 20, height: 1))
        #expect(field.frame == Rect(x: 0, y: 1, width: 20, height: 1))
        #expect(list.frame == Rect(x: 0, y: 2, width: 20, height: 5))
        #expect(status.frame == Rect(x: 0, y: 7, width: 20, height: 1))
    }

    @Test func horizontalStackWithSpacingAndHiddenChild() {
        let ok = Button("OK")
        let cancel = Button("Cancel")
        let hidden = Label("hidden")
        hidden.isHidden = true
        let row = Stack(.horizontal, spacing: 1, [ok, hidden, cancel])
        let (app, screen) = show(row, width: 20, height: 1)
        #expect(screen.lines == ["[ OK ] [ Cancel ]   "])
        #expect(ok.frame.width == 6)
        #expect(cancel.frame.x == 7)
        hidden.isHidden = false
        app.redraw()
        #expect(screen.lines == ["[ OK ] hidden [ Can…"])
    }

    @Test func boxPreferredSizeWrapsItsChild() {
        let form = Stack(.vertical, [Box(title: "Email", TextField()), Button("Sign in")])
        let (_, screen) = show(form, width: 12, height: 5)
        #expect(screen.lines == [
            "┌─ Email ──┐",
            "│          │",
            "└──────────┘",
            "[ Sign in ] ",
            "            ",
        ])
    }
}

@MainActor
@Suite struct BesideAndCompactButtonTests {
    /// Beside from `besideFrom` columns; below while the first keeps its rows; else the second gives way.
    @Test func theSecondGoesBesideBelowOrNowhere() {
        let first = Label("first"), second = Label("second")
        let beside = Beside(first, second, besideFrom: 30, minimumHeight: 3, secondWidth: 8, secondHeight: 2)
        let (app, _) = show(beside, width: 40, height: 6)
        #expect(first.frame == Rect(x: 0, y: 0, width: 32, height: 6) && second.frame == Rect(x: 32, y: 0, width: 8, height: 6))
        let (_, _) = show(beside, width: 20, height: 6)
        #expect(first.frame == Rect(x: 0, y: 0, width: 20, height: 4) && second.frame == Rect(x: 0, y: 4, width: 20, height: 2))
        let (_, _) = show(beside, width: 20, height: 4)
        #expect(first.frame == Rect(x: 0, y: 0, width: 20, height: 4) && second.isSqueezedOut)
        _ = app
    }

    @Test func aCompactButtonDropsItsInnerSpaces() {
        let button = Button("Clear done")
        #expect(button.preferredLength(.horizontal, cross: 1) == 14)
        button.isCompact = true
        #expect(button.preferredLength(.horizontal, cross: 1) == 12)
        let (_, screen) = show(button, width: 12, height: 1)
        #expect(screen.lines == ["[Clear done]"])
    }
}
