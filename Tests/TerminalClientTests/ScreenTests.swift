import Testing
import TetherClient
import TetherJSON
import TetherTUI
import TetherTestSupport
@testable import tether

/// The screens on TetherTUI's TestBackend, bound to rooms of a real `tetherd` through an
/// in-process client: the same code as on a terminal, driven key by key.
@MainActor
@Suite("tether screens on a test backend", .serialized, .timeLimit(.minutes(1)))
struct ScreenTests {
    /// A shell for `room` on a fresh client, on a `width`×`height` test terminal, once synced.
    func open(_ room: String, on daemon: Daemon, width: Int = 70, height: Int = 20) async throws -> (TetherClient, ScreenContext, Application, TestBackend) {
        try await open(room, url: daemon.url, width: width, height: height)
    }

    func open(_ room: String, url: String, width: Int = 70, height: Int = 20, synced: Bool = true) async throws -> (TetherClient, ScreenContext, Application, TestBackend) {
        let client = TetherClient(options: ClientOptions(url: url))
        try client.connect()
        let context = ScreenContext(client: client, room: client.room(room))
        let shell = Shell(client: client, context: context)
        let backend = TestBackend(width: width, height: height)
        let application = Application(root: shell.root, backend: backend)
        shell.attach(to: application)
        if synced {
            try await eventually("\(room) synced") { context.room.isSynced && client.connectionState.value == .live }
        } else {
            try await eventually("connected") { client.connectionState.value == .live }
        }
        application.redraw()
        return (client, context, application, backend)
    }

    @Test func counterButtonsSendActionsAndTheStatusBarFollows() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (client, context, app, screen) = try await open("counter", on: daemon)
        #expect(screen.lines.contains { $0.contains("count: 0") })
        #expect(screen.lines.last?.hasPrefix("● live │ room counter │ v0") == true)

        app.handle(.tab)  // from "-" to "+"
        app.handle(.enter)
        await app.settle()
        app.redraw()
        #expect(screen.lines.contains { $0.contains("count: 1") })
        #expect(screen.lines.last?.hasPrefix("● live │ room counter │ v1 │ ") == true)
        #expect(screen.lines.last?.contains(" ms") == true)

        // An action's error goes to the notice line above the hints; the next success clears it.
        await context.send("fly")
        app.redraw()
        #expect(screen.lines.contains { $0.hasPrefix("✗ fly: unknown_action: ") }, "\(screen.lines)")
        #expect(screen.lines.last?.hasPrefix("● live │ room counter │ v1 │ ") == true, "the status bar keeps the state")
        app.handle(.char("r"))
        await app.settle()
        app.redraw()
        #expect(screen.lines.contains { $0.contains("count: 0") })
        #expect(!screen.lines.contains { $0.contains("unknown_action") })

        app.handle(.char("q"))
        #expect(app.quitRequested)
        await client.close()
    }

    @Test func signInFollowsTheRemoteSignInEnabled() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (client, context, app, screen) = try await open("login", on: daemon)
        #expect(screen.lines.contains { $0.contains("[ Sign in (disabled) ]") })
        for c in "a@b.c" { app.handle(.char(c)) }
        app.handle(.tab)
        for c in "123456" { app.handle(.char(c)) }
        await app.settle()
        #expect(context.room.state["passwordLength"] == 6)
        #expect(context.room.state["email"] == "a@b.c")
        app.redraw()
        #expect(screen.lines.contains { $0.contains("[ Sign in ]") })
        #expect(!screen.lines.contains { $0.contains("123456") }, "the password is masked")
        app.handle(.tab)
        app.handle(.enter)
        await app.settle()
        app.redraw()
        #expect(screen.lines.contains { $0.contains("Signed in as a@b.c") })
        await client.close()
    }

    @Test func exchangeResultFollowsTheTypedAmount() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (client, _, app, screen) = try await open("exchange", on: daemon)
        for c in "2.5" { app.handle(.char(c)) }
        await app.settle()
        app.redraw()
        #expect(screen.lines.contains { $0.contains("3375.00") })
        #expect(screen.lines.contains { $0.contains("rate: ") && $0.contains("1350.0") })
        await client.close()
    }

    @Test func jsonTreeMarksTheChangedSubtree() {
        let state: JSON = ["fields": ["a": 1, "b": ["x": [1, "가"]]]]
        let lines = JSONTree.lines(state, changed: ["/fields/b"]).map(\.text)
        #expect(lines == [
            "  {",
            #"    "fields": {"#,
            #"      "a": 1,"#,
            #"»     "b": {"#,
            #"»       "x": ["#,
            #"»         1,"#,
            #"»         "가""#,
            #"»       ]"#,
            #"»     }"#,
            "    }",
            "  }",
        ])
        #expect(JSONTree.lines(["fields": [:]], changed: []).map(\.text) == ["  {", #"    "fields": {}"#, "  }"])
    }

    @Test func roomKindsPickTheirScreens() {
        #expect(Screens.kind(of: "todo:team-a") == "todo")
        #expect(Screens.kind(of: "counter") == "counter")
        #expect(Screens.kind(of: ":x") == "")
        #expect(Shell.shorten("cannot connect to ws://h:1: ws://h:1/: connection refused", url: "ws://h:1") == "cannot connect: connection refused")
    }
}
