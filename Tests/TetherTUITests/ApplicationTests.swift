import Testing
import TetherTUI
import TetherTestSupport

@MainActor
@Suite struct RendererTests {
    @Test func onlyChangedCellsAreWritten() {
        let counter = Label("Counter: 0")
        let root = Stack(.vertical, [counter, Label("some static text"), StatusBar(connection: .live, room: "clock")])
        let (app, screen) = show(root, width: 30, height: 5)
        #expect(screen.lastFlushCellCount > 20)

        counter.text = "Counter: 1"
        app.redraw()
        #expect(screen.lastFlushCellCount == 1)
        #expect(screen.lines[0] == "Counter: 1".padded(toWidth: 30))

        app.redraw()
        #expect(screen.lastFlushCellCount == 0)

        counter.text = "Counter: 10"
        app.redraw()
        #expect(screen.lastFlushCellCount == 1)  // the "1" stays; only the "0" is new
    }

    @Test func wideCharacterChangeWritesOneCell() {
        let label = Label("가나다")
        let (app, screen) = show(label, width: 10, height: 1)
        label.text = "가나라"
        app.redraw()
        #expect(screen.lastFlushCellCount == 1)
        #expect(screen.lines == ["가나라    "])

        // Shifting by one cell rewrites what moved, and the screen stays aligned.
        label.text = " 가나라"
        app.redraw()
        #expect(screen.lines == [" 가나라   "])
        #expect(screen.lastFlushCellCount == 4)
    }

    @Test func styleChangeIsAChange() {
        let label = Label("ab")
        let (app, screen) = show(label, width: 2, height: 1)
        label.style = Style(fg: .red)
        app.redraw()
        #expect(screen.lastFlushCellCount == 2)
        #expect(screen.style(x: 1, y: 0).fg == .red)
    }

    /// Whatever the sequence of frames, diffs applied to a terminal-like screen reproduce the frame.
    @Test func randomFramesWithWideCharactersStayInSync() {
        var generator = SystemRandomNumberGenerator()
        let backend = TestBackend(width: 12, height: 3)
        let renderer = Renderer(backend: backend)
        let pieces = ["a", "b", "가", "나", "😀", " ", "│"]
        let styles = [Style.plain, Style(fg: .red), Style(reverse: true)]
        for _ in 0..<300 {
            var frame = Buffer(width: 12, height: 3)
            for _ in 0..<Int.random(in: 0...10, using: &generator) {
                let text = (0..<Int.random(in: 1...5, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
                frame.write(
                    text, x: Int.random(in: 0..<12, using: &generator), y: Int.random(in: 0..<3, using: &generator),
                    style: styles.randomElement(using: &generator)!)
            }
            renderer.draw(frame)
            #expect(backend.screen.lines == frame.lines)
            for y in 0..<3 {
                for x in 0..<12 where !frame[x, y].isContinuation {
                    #expect(backend.screen[x, y] == frame[x, y])
                }
            }
        }
    }
}

@MainActor
@Suite struct FocusAndKeyTests {
    @Test func tabAndShiftTabFollowTheTreeOrder() {
        let email = TextField()
        let password = TextField(isMasked: true)
        let signIn = Button("Sign in")
        let hidden = Button("Hidden")
        hidden.isHidden = true
        let list = ListView(items: ["one"])
        let root = Stack(.vertical, [
            Box(title: "Email", email), Box(title: "Password", password),
            Stack(.horizontal, spacing: 1, [signIn, hidden]), Label("not focusable"), list,
        ])
        let (app, _) = show(root, width: 30, height: 12)
        #expect(app.focused === email)
        #expect(email.isFocused)

        var order: [Widget?] = []
        for _ in 0..<4 {
            app.handle(.tab)
            order.append(app.focused)
        }
        #expect(order.map { $0.map(ObjectIdentifier.init) } == [password, signIn, list, email].map { ObjectIdentifier($0) })
        #expect(!password.isFocused && email.isFocused)

        app.handle(.backTab)
        #expect(app.focused === list)
        app.handle(.backTab)
        #expect(app.focused === signIn)

        // A focused widget that gets hidden gives the focus back to the first one.
        signIn.isHidden = true
        app.redraw()
        #expect(app.focused === email)
    }

    @Test func focusedBoxBorderIsHighlighted() {
        let first = Box(title: "A", TextField())
        let second = Box(title: "B", TextField())
        let (app, screen) = show(Stack(.vertical, [first, second]), width: 10, height: 6)
        #expect(screen.style(x: 0, y: 0).fg == .cyan)
        #expect(screen.style(x: 0, y: 3).fg == nil)
        app.handle(.tab)
        app.redraw()
        #expect(screen.style(x: 0, y: 0).fg == nil)
        #expect(screen.style(x: 0, y: 3).fg == .cyan)
    }

    @Test func signInFormFlow() async {
        let email = TextField(placeholder: "email")
        let password = TextField(placeholder: "password", isMasked: true)
        var signedIn: (String, String)?
        let signIn = Button("Sign in", isEnabled: false)
        signIn.onPress { signedIn = (email.text, password.text) }
        password.onChange { signIn.isEnabled = $0.count >= 6 }
        let (app, screen) = show(Stack(.vertical, [email, password, signIn]), width: 20, height: 3)

        for c in "me@x.kr" { app.handle(.char(c)) }
        app.handle(.tab)
        for c in "비밀번호1234" { app.handle(.char(c)) }
        app.handle(.tab)
        await app.settle()
        app.handle(.enter)
        await app.settle()
        #expect(signIn.isEnabled)
        #expect(signedIn?.0 == "me@x.kr")
        #expect(signedIn?.1 == "비밀번호1234")
        app.redraw()
        #expect(screen.lines == ["me@x.kr             ", "••••••••            ", "[ Sign in ]         "])
        #expect(screen.cursor == nil)  // a button has the focus: no cursor
    }

    @Test func qTypesInATextFieldButQuitsElsewhere() {
        let field = TextField()
        let button = Button("OK")
        let (app, _) = show(Stack(.vertical, [field, button]), width: 10, height: 2)
        app.handle(.char("q"))
        #expect(field.text == "q")
        #expect(!app.quitRequested)
        app.handle(.tab)
        app.handle(.char("q"))
        #expect(app.quitRequested)
        #expect(field.text == "q")
    }

    @Test func qQuitsFromAList() {
        let (app, _) = show(ListView(items: ["a", "b"]), width: 10, height: 2)
        app.handle(.char("q"))
        #expect(app.quitRequested)
    }

    @Test func ctrlCQuitsEvenInATextField() {
        let field = TextField()
        let (app, _) = show(field, width: 10, height: 1)
        app.handle(.ctrl("c"))
        #expect(app.quitRequested)
        #expect(field.text == "")
    }

    @Test func unusedKeysReachTheApplicationHandler() {
        let field = TextField()
        let next = Button("Next")
        let (app, _) = show(Stack(.vertical, [field, next]), width: 10, height: 2)
        var shortcuts: [Key] = []
        app.onKey = { key in
            guard key == .char("n") else { return false }
            shortcuts.append(key)
            return true
        }
        app.handle(.char("n"))  // typed into the field
        app.handle(.tab)
        app.handle(.char("n"))  // the button doesn't use it: a shortcut
        #expect(field.text == "n")
        #expect(shortcuts == [.char("n")])
    }
}

@MainActor
@Suite struct ResizeAndRunLoopTests {
    @Test func resizeLaysOutAgain() {
        let status = StatusBar(connection: .live)
        let root = Stack(.vertical, [Box(title: "Log", ListView(items: ["a", "b"], isSelectable: false)), status])
        root.setSize(.fill(), of: root.items[0].widget)
        let (app, screen) = show(root, width: 12, height: 4)
        #expect(screen.lines == [
            "┌─ Log ────┐",
            "│a         │",
            "└──────────┘",
            "● live      ",
        ])
        screen.resize(width: 16, height: 6)
        app.redraw()
        #expect(screen.lines == [
            "┌─ Log ────────┐",
            "│a             │",
            "│b             │",
            "│              │",
            "└──────────────┘",
            "● live          ",
        ])
        #expect(status.frame == Rect(x: 0, y: 5, width: 16, height: 1))
    }

    @Test func runProcessesKeysUntilQuit() async throws {
        let backend = TestBackend(width: 20, height: 2)
        var pressed = 0
        let field = TextField()
        let button = Button("Go").onPress { pressed += 1 }
        let app = Application(root: Stack(.vertical, [field, button]), backend: backend)
        backend.type("héllo 한글\t\rq")
        try await app.run()
        await app.settle()
        #expect(field.text == "héllo 한글")
        #expect(pressed == 1)
        #expect(app.quitRequested)
        #expect(!app.isRunning)
        #expect(!backend.isStarted)  // the terminal was given back
    }

    @Test func redrawsOnlyWhenSomethingChanged() async throws {
        let label = Label("a")
        let backend = TestBackend(width: 10, height: 1)
        let app = Application(root: label, backend: backend)
        let run = Task { try await app.run() }
        try await eventually("frame 1 drawn") { backend.flushCount == 1 }
        #expect(backend.flushCount == 1)
        try await Task.sleep(for: .milliseconds(30))
        #expect(backend.flushCount == 1)  // idle: nothing drawn

        // Three changes in one turn: one redraw.
        label.text = "b"
        label.text = "c"
        label.style = Style(bold: true)
        try await eventually("frame 2 drawn") { backend.flushCount == 2 }
        try await Task.sleep(for: .milliseconds(30))
        #expect(backend.flushCount == 2)
        #expect(backend.lines == ["c         "])
        #expect(backend.style(x: 0, y: 0).bold)

        // Resizing redraws at the new size.
        backend.resize(width: 4, height: 2)
        try await eventually("frame 3 drawn") { backend.flushCount == 3 }
        #expect(backend.lines == ["c   ", "    "])

        backend.send(.terminate)
        try await run.value
        #expect(!app.isRunning)
    }

    @Test func quitFromAHandlerEndsTheRunLoop() async throws {
        let backend = TestBackend(width: 10, height: 1)
        let app = Application(root: Label("x"), backend: backend)
        let quit = Button("Quit")
        app.root = quit
        quit.onPress { app.quit() }
        backend.press(.enter)
        try await app.run()
        #expect(app.quitRequested)
    }
}
