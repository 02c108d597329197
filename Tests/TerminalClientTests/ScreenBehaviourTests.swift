import Synchronization
import Testing
import TetherClient
import TetherJSON
import TetherTUI
import TetherTestSupport
@testable import tether

/// The screens' behaviour on a test backend, against scripted servers (states a real daemon
/// reaches only with effort: a resync snapshot, a room that never arrives, the newer exchange
/// and login rooms) and against a real daemon.
@MainActor
@Suite("tether screens: selection, status, small terminals, new rooms", .serialized, .timeLimit(.minutes(1)))
struct ScreenBehaviourTests {
    nonisolated static let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#

    /// A scripted server for room `room`: `snapshot` answers a join, each action is recorded and
    /// acked (after the frames `reply` gives for it, if any).
    nonisolated static func server(room: String, snapshot: String?, reply: @escaping @Sendable (JSON) -> [String] = { _ in [] }) throws -> ScriptedServer {
        let version = Mutex(0)
        return try ScriptedServer(greeting: [hello]) { text in
            guard let message = try? JSONParser().parse(text) else { return [] }
            switch message["type"]?.stringValue {
            case "join":
                guard let snapshot else { return [] }
                return [#"{"type":"snapshot","room":"\#(room)","epoch":"E","version":0,"state":\#(snapshot)}"#]
            case "action":
                let id = message["id"]?.intValue ?? 0
                let frames = reply(message)
                let acked = version.withLock { version in
                    version += frames.count
                    return version
                }
                return frames + [#"{"type":"ack","id":\#(id),"room":"\#(room)","version":\#(acked)}"#]
            default:
                return []
            }
        }
    }

    func open(_ room: String, url: String, width: Int = 70, height: Int = 20, synced: Bool = true,
              configure: (Shell) -> Void = { _ in },
              options: (inout ClientOptions) -> Void = { _ in }) async throws -> (TetherClient, Shell, Application, TestBackend) {
        var clientOptions = ClientOptions(url: url)
        options(&clientOptions)
        let client = TetherClient(options: clientOptions)
        try client.connect()
        let context = ScreenContext(client: client, room: client.room(room))
        let shell = Shell(client: client, context: context)
        configure(shell)
        let backend = TestBackend(width: width, height: height)
        let application = Application(root: shell.root, backend: backend)
        shell.attach(to: application)
        try await eventually("connected\(synced ? " and synced" : "")") {
            client.connectionState.value.isConnected && (!synced || context.room.isSynced)
        }
        application.redraw()
        return (client, shell, application, backend)
    }

    /// The action frames the scripted server received, as JSON.
    func actions(_ server: ScriptedServer) -> [JSON] {
        server.received.compactMap { try? JSONParser().parse($0) }.filter { $0["type"] == "action" }
    }

    // MARK: Selection

    @Test func theTodoSelectionFollowsItsItemAcrossASnapshotAndARemoval() async throws {
        let items = ["a", "b", "c", "d"].map { #"{"id":"\#($0)","title":"\#($0.uppercased())","done":false}"# }
        let server = try Self.server(room: "todo:x", snapshot: #"{"items":[\#(items.joined(separator: ","))]}"#)
        defer { server.stop() }
        let (client, shell, app, _) = try await open("todo:x", url: server.url)
        let todo = try #require(shell.screen as? TodoScreen)
        app.handle(.tab)  // from the input to the list
        app.handle(.down)
        app.handle(.down)
        #expect(todo.list.selectedKey == "c")

        // A resync: a fresh snapshot in which A is gone, so C moved up a row.
        server.broadcast([#"{"type":"snapshot","room":"todo:x","epoch":"F","version":9,"state":{"items":[\#(items[1...].joined(separator: ","))]}}"#])
        try await eventually("the new snapshot") { shell.context.room.version == 9 }
        app.handle(.char(" "))
        await app.settle()
        #expect(actions(server).last?["args"] == ["id": "c"], "Space toggles C, the selected item, not the row's new occupant")

        // C removed by someone else: the selection moves to its neighbour, D.
        server.broadcast([#"{"type":"patch","room":"todo:x","epoch":"F","from":9,"version":10,"ops":[{"op":"remove","path":"/items/1"}]}"#])
        try await eventually("the removal") { shell.context.room.version == 10 }
        #expect(todo.list.selectedKey == "d")
        app.handle(.delete)
        await app.settle()
        #expect(actions(server).last?["name"] == "remove" && actions(server).last?["args"] == ["id": "d"])
        await client.close()
    }

    @Test func todoRenamesTheSelectedItem() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let (client, shell, app, screen) = try await open("todo:rename", url: daemon.url)
        for title in ["milk", "eggs"] { await shell.context.send("add", ["title": .string(title)]) }
        app.handle(.tab)
        app.handle(.down)  // eggs
        app.handle(.char("e"))
        app.redraw()
        #expect(screen.lines.contains { $0.contains("Rename \"eggs\" (Esc cancels)") })
        app.handle(.ctrl("u"))
        for c in "bread" { app.handle(.char(c)) }
        app.handle(.enter)
        await app.settle()
        try await eventually("the rename") { shell.context.room.state["items"]?[1]?["title"] == "bread" }
        #expect(shell.context.room.state["items"]?[0]?["title"] == "milk")
        app.redraw()
        #expect(screen.lines.contains { $0.contains("┌─ Add ") }, "back to adding")
        await client.close()
    }

    /// Another member deletes the item being renamed: the screen says so in words (no ids), and
    /// the typed title is kept as a new to-do to add.
    @Test func todoSaysInWordsWhenTheItemBeingRenamedIsDeleted() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let (client, shell, app, screen) = try await open("todo:gone", url: daemon.url)
        for title in ["milk", "eggs"] { await shell.context.send("add", ["title": .string(title)]) }
        app.handle(.tab)
        app.handle(.down)  // eggs
        app.handle(.char("e"))
        app.handle(.ctrl("u"))
        for c in "bread" { app.handle(.char(c)) }
        #expect(try await runTether(["send", "--url", daemon.url, "todo:gone", "remove", #"{"id":"t2"}"#]).status == 0)
        try await eventually("the deletion") { shell.context.room.state["items"]?.arrayValue?.count == 1 }
        app.redraw()
        let text = screen.lines.joined(separator: "\n")
        #expect(text.contains("eggs was deleted while you were renaming it"), "\(text)")
        #expect(!text.contains("t2"), "no internal ids: \(text)")
        #expect(text.contains("┌─ Add "), "back to adding: \(text)")
        app.handle(.enter)  // what was typed is not lost: it becomes a new to-do
        await app.settle()
        try await eventually("bread added") { shell.context.room.state["items"]?[1]?["title"] == "bread" }
        await client.close()
    }

    /// The rename arrives after the deletion (a race): the server's error is put in words, the
    /// hints follow the focus (the list), and letters typed there start a new to-do instead of
    /// toggling items unseen.
    @Test func todoExplainsALateRenameAndLettersOnTheListNeverToggle() async throws {
        let eggs = #"{"id":"b","title":"eggs","done":false}"#
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            guard let message = try? JSONParser().parse(text) else { return [] }
            let id = message["id"]?.intValue ?? 0
            switch (message["type"]?.stringValue, message["name"]?.stringValue) {
            case ("join", _): return [#"{"type":"snapshot","room":"todo:x","epoch":"E","version":0,"state":{"items":[{"id":"a","title":"milk","done":false},\#(eggs)]}}"#]
            case ("action", "rename"?):
                return [#"{"type":"patch","room":"todo:x","epoch":"E","from":0,"version":1,"ops":[{"op":"remove","path":"/items/1"}]}"#,
                        #"{"type":"error","code":"invalid_args","message":"no item with id \"b\"","id":\#(id),"room":"todo:x","applied":false}"#]
            case ("action", _): return [#"{"type":"ack","id":\#(id),"room":"todo:x","version":1}"#]
            default: return []
            }
        }
        defer { server.stop() }
        let (client, shell, app, screen) = try await open("todo:x", url: server.url, width: 80)
        let todo = try #require(shell.screen as? TodoScreen)
        app.handle(.tab)
        app.handle(.down)  // eggs
        app.handle(.char("e"))
        app.handle(.ctrl("u"))
        for c in "bread" { app.handle(.char(c)) }
        app.handle(.enter)
        await app.settle()
        try await eventually("the deletion") { shell.context.room.version == 1 }
        app.redraw()
        var text = screen.lines.joined(separator: "\n")
        #expect(text.contains("✗ eggs was deleted while you were renaming it"), "\(text)")
        #expect(!text.contains("\"b\""), "no internal ids: \(text)")
        #expect(app.focused === todo.list)
        let hints = screen.lines[screen.lines.count - 2]
        #expect(hints.contains("Space toggles") && !hints.contains("type + Enter adds"), "hints follow the focus: \(hints)")

        let sent = actions(server).count
        for c in "buy oil" { app.handle(.char(c)) }
        await app.settle()
        app.redraw()
        #expect(actions(server).count == sent, "typing on the list sends nothing: \(actions(server))")
        #expect(todo.input.text == "buy oil" && app.focused === todo.input)
        text = screen.lines.joined(separator: "\n")
        #expect(screen.lines[screen.lines.count - 2].contains("Enter adds"), "\(text)")
        await client.close()
    }

    // MARK: Status bar

    @Test func resyncNewsExpiresAndTheStatusShowsJoiningUntilTheState() async throws {
        let server = try Self.server(room: "counter", snapshot: nil)
        defer { server.stop() }
        let (client, shell, app, screen) = try await open("counter", url: server.url, synced: false) { $0.transientDuration = .milliseconds(300) }
        // Connected, no state yet: not "live", and no big "-" that reads as a minus sign.
        #expect(screen.lines.last?.hasPrefix("● joining │ room counter") == true, "\(screen.lines.last ?? "")")
        #expect(screen.lines.contains { $0.contains("waiting for the count…") })
        #expect(!screen.lines.contains { $0.contains("█") })

        server.broadcast([#"{"type":"snapshot","room":"counter","epoch":"E","version":3,"state":{"count":5}}"#])
        try await eventually("the state") { shell.context.room.isSynced }
        app.redraw()
        #expect(screen.lines.last == "● live │ room counter │ v3".padded(toWidth: 70))
        #expect(screen.lines.contains { $0.contains("██") } && screen.lines.contains { $0.contains("count: 5") })

        // A snapshot of another epoch: resynced, said for a while, then the bar is plain again.
        server.broadcast([#"{"type":"snapshot","room":"counter","epoch":"F","version":1,"state":{"count":0}}"#])
        try await eventually("the resync") { shell.context.room.epoch == "F" }
        app.redraw()
        #expect(screen.lines.last?.hasPrefix("● live │ room counter │ v1 │ counter resynced from a snapshot") == true, "\(screen.lines.last ?? "")")
        try await eventually("the news to expire") {
            app.redraw()
            return screen.lines.last == "● live │ room counter │ v1".padded(toWidth: 70)
        }
        await client.close()
    }

    @Test func anUnknownRoomIsExplainedInTheBody() async throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let (client, shell, app, screen) = try await open("whatever", url: daemon.url, synced: false)
        try await eventually("the refusal") { shell.context.room.lastError.value != nil }
        app.redraw()
        let text = screen.lines.joined(separator: "\n")
        #expect(text.contains("Cannot open the room \"whatever\"."))
        #expect(text.contains("unknown_room: no room kind \"whatever\"; kinds are"))
        #expect(text.contains("counter") && text.contains("todo"))
        #expect(screen.lines.last?.hasPrefix("● not joined │ room whatever │ unknown_room") == true, "\(screen.lines.last ?? "")")
        await client.close()
    }

    // MARK: Rooms

    @Test func loginSignsOutAndTheHintsFollow() async throws {
        let signedIn = #"{"email":"a@b.c","passwordLength":6,"signInEnabled":true,"errorMessage":null,"signedIn":true}"#
        let server = try Self.server(room: "login", snapshot: signedIn) { action in
            guard action["name"] == "signOut" else { return [] }
            return [#"{"type":"patch","room":"login","epoch":"E","from":0,"version":1,"ops":[{"op":"replace","path":"/signedIn","value":false},{"op":"replace","path":"/email","value":""},{"op":"replace","path":"/passwordLength","value":0},{"op":"replace","path":"/signInEnabled","value":false}]}"#]
        }
        defer { server.stop() }
        let (client, shell, app, screen) = try await open("login", url: server.url, width: 80)
        #expect(screen.lines.contains { $0.contains("Signed in as a@b.c") })
        #expect(screen.lines.contains { $0.contains("[ Sign out ]") })
        let hints = screen.lines[screen.lines.count - 2]
        #expect(hints.contains("Enter signs out") && !hints.contains("signs in") && !hints.contains("Tab"), "\(hints)")

        app.handle(.enter)  // the focused Sign out button
        await app.settle()
        #expect(actions(server).last?["name"] == "signOut")
        try await eventually("signed out") { shell.context.room.state["signedIn"] == false }
        app.redraw()
        #expect(screen.lines.contains { $0.contains("[ Sign in (disabled) ]") })
        #expect(screen.lines.contains { $0.contains("you@example.com") }, "the email field is empty again")
        #expect(screen.lines[screen.lines.count - 2].contains("Enter on Sign in signs in"))
        await client.close()
    }

    @Test func galleryShowsItsPlaceAndTheClockOffersNoFocus() async throws {
        let server = try Self.server(room: "gallery", snapshot: #"{"index":1,"count":3,"name":"Alan Turing","picture":"(o o)"}"#)
        defer { server.stop() }
        let (client, _, _, screen) = try await open("gallery", url: server.url)
        #expect(screen.lines.contains { $0.contains("2 of 3") })
        #expect(GalleryScreen.position(index: 0, count: nil) == "no. 1")
        await client.close()

        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let (clockClient, _, _, clock) = try await open("clock", url: daemon.url)
        let hints = clock.lines[clock.lines.count - 2]
        #expect(hints.contains("the server updates the time every second") && hints.contains("q quit"))
        #expect(!hints.contains("Tab"), "nothing to focus: \(hints)")
        await clockClient.close()
    }

    @Test func exchangeNamesThePairSwitchesCurrenciesAndExplainsAnAmount() async throws {
        let state = #"{"amount":"1,000","from":"USD","to":"KRW","rate":1350.0,"result":"","error":"\"1,000\" is not a number: write 1000","currencies":["USD","KRW","EUR","JPY"]}"#
        let server = try Self.server(room: "exchange", snapshot: state)
        defer { server.stop() }
        let (client, _, app, screen) = try await open("exchange", url: server.url, width: 80, height: 22)
        let text = screen.lines.joined(separator: "\n")
        #expect(text.contains("Amount in USD → KRW"))
        #expect(text.contains("✗ \"1,000\" is not a number: write 1000"))
        #expect(text.contains("rate: 1 USD = 1350.0 KRW"))
        #expect(text.contains("from [ USD ✓ ] [ KRW ] [ EUR ] [ JPY ]"), "\(text)")
        #expect(text.contains("to   [ USD ] [ KRW ✓ ] [ EUR ] [ JPY ]"))
        // Tab from the amount to the from row: USD, KRW, EUR; Enter picks EUR.
        for _ in 0..<3 { app.handle(.tab) }
        app.handle(.enter)
        await app.settle()
        #expect(actions(server).last?["name"] == "setPair")
        #expect(actions(server).last?["args"] == ["from": "EUR", "to": "KRW"])
        // From KRW, the other side's currency: the two swap.
        app.handle(.backTab)
        app.handle(.enter)
        await app.settle()
        #expect(actions(server).last?["args"] == ["from": "KRW", "to": "USD"])
        await client.close()
    }

    /// Another client changes both currencies; a button of a row whose marks did not move must
    /// still act on the room's pair now (it used to keep the "to" it was drawn with).
    @Test func exchangeButtonsActOnThePairOfNowNotOfWhenTheyWereDrawn() async throws {
        let state = #"{"amount":"1","from":"USD","to":"KRW","rate":1350.0,"result":"1350","error":null,"currencies":["USD","KRW","EUR","JPY"]}"#
        let server = try Self.server(room: "exchange", snapshot: state)
        defer { server.stop() }
        let (client, shell, app, screen) = try await open("exchange", url: server.url, width: 80, height: 22)
        server.broadcast([#"{"type":"patch","room":"exchange","epoch":"E","from":0,"version":1,"ops":[{"op":"replace","path":"/from","value":"EUR"},{"op":"replace","path":"/to","value":"USD"}]}"#])
        try await eventually("the new pair") { shell.context.room.state["to"] == "USD" }
        app.redraw()
        #expect(screen.lines.joined(separator: "\n").contains("Amount in EUR → USD"))
        // Tab from the amount to the from row's fourth button, JPY.
        for _ in 0..<4 { app.handle(.tab) }
        app.handle(.enter)
        await app.settle()
        #expect(actions(server).last?["args"] == ["from": "JPY", "to": "USD"])
        await client.close()
    }

    @Test func exchangeExplainsAnUnreadableAmountOnAnOlderServer() async throws {
        let server = try Self.server(room: "exchange", snapshot: #"{"amount":"abc","rate":1350.0,"result":""}"#)
        defer { server.stop() }
        let (client, _, _, screen) = try await open("exchange", url: server.url, width: 80, height: 22)
        #expect(screen.lines.contains { $0.contains("✗ \"abc\" is not a number") })
        #expect(!screen.lines.contains { $0.contains("from [") }, "no currencies to switch between")
        #expect(ExchangeScreen.whyUnreadable("1,000") == "\"1,000\" is not a number: write 1000 (no thousands separators)")
        #expect(ExchangeScreen.whyUnreadable("1e20") == "\"1e20\": write the number without an exponent")
        await client.close()
    }

    @Test func calculatorShowsTheEndOfALongNumberAndErrorsInRed() async throws {
        let long = String(repeating: "1234567890", count: 5)
        let server = try Self.server(room: "calculator", snapshot: #"{"display":"\#(long)","history":[]}"#)
        defer { server.stop() }
        let (client, shell, app, screen) = try await open("calculator", url: server.url, width: 40, height: 12)
        let display = try #require(screen.lines.first { $0.contains("67890") })
        #expect(display.contains("…") && display.contains("1234567890│"), "the end being typed stays visible: \(display)")
        server.broadcast([#"{"type":"patch","room":"calculator","epoch":"E","from":0,"version":1,"ops":[{"op":"replace","path":"/display","value":"Error"}]}"#])
        try await eventually("the error") { shell.context.room.version == 1 }
        app.redraw()
        let y = try #require(screen.lines.firstIndex { $0.contains("Error") })
        let x = try #require(screen.lines[y].firstIndex(of: "E")).utf16Offset(in: screen.lines[y])
        #expect(screen.style(x: x, y: y).fg == .red)
        #expect(screen.lines.contains { $0.contains("[ % mod ]") })
        await client.close()
    }

    // MARK: Small terminals

    /// Currency buttons that don't fit are not cut off unannounced: the exchange says which pair
    /// is set and that a wider terminal shows the buttons.
    @Test func exchangeSaysSoWhenItsCurrencyButtonsDoNotFit() async throws {
        let state = #"{"amount":"","from":"USD","to":"KRW","rate":1350.0,"result":"","error":null,"currencies":["USD","KRW","EUR","JPY","GBP"]}"#
        let server = try Self.server(room: "exchange", snapshot: state)
        defer { server.stop() }
        let (client, _, _, screen) = try await open("exchange", url: server.url, width: 40, height: 12)
        let text = screen.lines.joined(separator: "\n")
        #expect(!text.contains("[ EUR ]"), "no row of buttons cut short: \(text)")
        #expect(text.contains("USD → KRW") && text.contains("wider terminal"), "\(text)")
        await client.close()

        let (wide, _, _, wideScreen) = try await open("exchange", url: server.url, width: 80, height: 22)
        #expect(wideScreen.lines.joined(separator: "\n").contains("from [ USD ✓ ] [ KRW ] [ EUR ] [ JPY ] [ GBP ]"))
        await wide.close()
    }

    /// A list longer than its box says which of its items are in view.
    @Test func todoShowsWhichItemsAreInView() async throws {
        let items = (1...25).map { #"{"id":"t\#($0)","title":"item \#($0)","done":false}"# }
        let server = try Self.server(room: "todo", snapshot: #"{"items":[\#(items.joined(separator: ","))]}"#)
        defer { server.stop() }
        let (client, _, app, screen) = try await open("todo", url: server.url, width: 80, height: 24)
        #expect(screen.lines.contains { $0.contains("1–13 of 25") }, "\(screen.lines.joined(separator: "\n"))")
        app.handle(.tab)  // the list
        app.handle(.end)
        app.redraw()
        #expect(screen.lines.contains { $0.contains("13–25 of 25") }, "\(screen.lines.joined(separator: "\n"))")
        await client.close()

        let four = try Self.server(room: "todo", snapshot: #"{"items":[\#(items.prefix(4).joined(separator: ","))]}"#)
        defer { four.stop() }
        let (small, _, _, smallScreen) = try await open("todo", url: four.url, width: 40, height: 12)
        #expect(smallScreen.lines.contains { $0.contains("1–3 of 4") }, "\(smallScreen.lines.joined(separator: "\n"))")
        await small.close()
    }

    /// On a narrow terminal the status bar still says why it reconnects, and which attempt it is.
    @Test func theStatusBarKeepsTheReasonForReconnectingWhenNarrow() async throws {
        let server = try Self.server(room: "counter", snapshot: #"{"count":0}"#)
        let (client, _, app, screen) = try await open("counter", url: server.url, width: 40, height: 12)
        server.stop()
        var reason = ""
        try await eventually("a failed reconnect", timeout: .seconds(15)) {
            guard case .reconnecting(let attempt, let why) = client.connectionState.value, attempt >= 2 else { return false }
            reason = Shell.shorten(why, url: client.options.url)
            return true
        }
        app.redraw()
        let bottom = screen.lines.suffix(3).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(bottom.contains("reconnecting (attempt "), "\(bottom)")
        #expect(bottom.contains(String(reason.prefix(30))), "the reason \"\(reason)\" in: \(bottom)")
        await client.close()
    }

    @Test func loginShowsTheShortPasswordErrorInEnglishBesideTheKorean() async throws {
        let state = #"{"email":"a@b.c","passwordLength":3,"signInEnabled":false,"errorMessage":"6자리 이상 비밀번호를 입력해주세요.","signedIn":false}"#
        let server = try Self.server(room: "login", snapshot: state)
        defer { server.stop() }
        let (client, _, _, screen) = try await open("login", url: server.url, width: 80)
        let text = screen.lines.joined(separator: "\n")
        #expect(text.contains("Please enter a password of at least 6 characters."), "\(text)")
        #expect(text.contains("6자리 이상 비밀번호를 입력해주세요."), "\(text)")
        await client.close()
    }

    /// A refusal the screen's contract names (`CounterContract.Failure.overflow`, thrown typed by
    /// the ContractRoom) reaches the notice line as any refusal does: action, code and message.
    @Test func aRefusalTheContractNamesIsShownAsTheServersRefusal() async throws {
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            guard let message = try? JSONParser().parse(text) else { return [] }
            switch message["type"]?.stringValue {
            case "join": return [#"{"type":"snapshot","room":"counter","epoch":"E","version":0,"state":{"count":0}}"#]
            case "action":
                let id = message["id"]?.intValue ?? 0
                return [#"{"type":"error","code":"invalid_args","message":"count would overflow","reason":"overflow","id":\#(id),"room":"counter","applied":false}"#]
            default: return []
            }
        }
        defer { server.stop() }
        let (client, shell, app, screen) = try await open("counter", url: server.url)
        app.handle(.char("+"))
        await app.settle()
        app.redraw()
        #expect(screen.lines.contains { $0.hasPrefix("✗ increment: invalid_args: count would overflow") }, "\(screen.lines)")
        #expect(screen.lines.contains { $0.contains("count: 0") }, "the prediction is dropped")
        #expect(actions(server).last?["name"] == "increment" && shell.context.room.state["count"] == 0)
        await client.close()
    }

    // MARK: Notices of unknown outcome

    /// A press without an answer waits, and after `waitingDelay` the screen says so; the answer
    /// clears it. A press the server lost track of goes again under its number.
    @Test func aPressWithoutAnAnswerSaysItIsWaitingUntilTheAnswer() async throws {
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            guard let message = try? JSONParser().parse(text), message["type"] == "join" else { return [] }
            return [#"{"type":"snapshot","room":"counter","epoch":"E","version":0,"state":{"count":0}}"#]
        }
        defer { server.stop() }
        let (client, shell, app, screen) = try await open("counter", url: server.url, configure: { $0.waitingDelay = .milliseconds(100) })
        app.handle(.char("+"))
        try await eventually("the waiting line") {
            app.redraw()
            return screen.lines.contains { $0.hasPrefix("1 press waiting for the server") }
        }
        #expect(!screen.lines.contains { $0.contains("may or may not") })

        let id = try #require(actions(server).last?["id"]?.intValue)
        server.broadcast([#"{"type":"patch","room":"counter","epoch":"E","from":0,"version":1,"ops":[{"op":"replace","path":"/count","value":1}]}"#,
                          #"{"type":"ack","id":\#(id),"room":"counter","version":1}"#])
        try await eventually("the answer clears the waiting line") {
            app.redraw()
            return !screen.lines.contains { $0.contains("waiting for the server") }
        }
        #expect(shell.context.room.state["count"] == 1)
        await client.close()
    }

    /// The server lost track of the press (a cluster's owner went away): the client sends it again
    /// under the same number, and the screen shows no doubt, only the answer.
    @Test func aPressTheServerLostTrackOfGoesAgain() async throws {
        let sends = Mutex(0)
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            guard let message = try? JSONParser().parse(text) else { return [] }
            let id = message["id"]?.intValue ?? 0
            switch (message["type"]?.stringValue, message["name"]?.stringValue) {
            case ("join", _): return [#"{"type":"snapshot","room":"counter","epoch":"E","version":4,"state":{"count":0}}"#]
            case ("action", "increment"?) where sends.withLock({ $0 += 1; return $0 }) == 1:
                return [#"{"type":"error","code":"unavailable","message":"the room's owner was lost","id":\#(id),"room":"counter","applied":"unknown"}"#]
            case ("action", _):
                return [#"{"type":"patch","room":"counter","epoch":"E","from":4,"version":5,"ops":[{"op":"replace","path":"/count","value":1}]}"#,
                        #"{"type":"ack","id":\#(id),"room":"counter","version":5}"#]
            default: return []
            }
        }
        defer { server.stop() }
        let (client, shell, app, screen) = try await open("counter", url: server.url)
        app.handle(.char("+"))
        try await eventually("the press is answered after its resend") { client.pendingActions.value.isEmpty && shell.context.room.serverState["count"] == 1 }
        app.redraw()
        #expect(!screen.lines.contains { $0.hasPrefix("?") || $0.hasPrefix("✗") }, "\(screen.lines)")
        let increments = actions(server).filter { $0["name"] == "increment" }
        #expect(increments.count == 2 && increments.allSatisfy { $0["seq"] == 1 }, "\(increments)")
        await client.close()
    }

    // MARK: Inspector

    @Test func theInspectorListsTheActionsAndFillsOneIn() async throws {
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            guard let message = try? JSONParser().parse(text) else { return [] }
            switch message["type"]?.stringValue {
            case "join": return [#"{"type":"snapshot","room":"counter","epoch":"E","version":0,"state":{"count":0}}"#]
            case "describe":
                let id = message["id"]?.intValue ?? 0
                return [#"{"type":"description","id":\#(id),"kinds":[{"name":"counter","scope":"shared","actions":[{"name":"increment","args":{"by":{"type":"integer","optional":true}}},{"name":"reset","args":{}}]}]}"#]
            case "action":
                let id = message["id"]?.intValue ?? 0
                return [#"{"type":"patch","room":"counter","epoch":"E","from":0,"version":1,"ops":[{"op":"replace","path":"/count","value":2}]}"#, #"{"type":"ack","id":\#(id),"room":"counter","version":1}"#]
            default: return []
            }
        }
        defer { server.stop() }
        let client = TetherClient(options: ClientOptions(url: server.url))
        try client.connect()
        let context = ScreenContext(client: client, room: client.room("counter"))
        let shell = Shell(client: client, context: context, inspector: true)
        let backend = TestBackend(width: 70, height: 24)
        let app = Application(root: shell.root, backend: backend)
        shell.attach(to: app)
        let inspector = try #require(shell.screen as? Inspector)
        try await eventually("the description") { inspector.actions.items.count == 2 }
        app.redraw()
        #expect(backend.lines.contains { $0.contains("increment by: integer?") })
        #expect(backend.lines.contains { $0.contains("reset") })
        app.focus(inspector.actions)
        app.handle(.enter)
        await app.settle()
        #expect(inspector.command.text == #"increment {"by": 0}"#)
        #expect(app.focused === inspector.command)
        app.handle(.ctrl("u"))
        for c in #"increment {"by": 2}"# { app.handle(.char(c)) }
        app.handle(.enter)
        await app.settle()
        app.redraw()
        let sent = try #require(server.received.compactMap { try? JSONParser().parse($0) }.last { $0["type"] == "action" })
        #expect(sent["name"] == "increment" && sent["args"] == ["by": 2])
        #expect(backend.lines.contains { $0.contains("✓ increment acknowledged at v1") })
        #expect(backend.lines.contains { $0.contains(#""count": 2"#) })

        // Arguments that are not a JSON object are caught before sending.
        for c in "reset [1]" { app.handle(.char(c)) }
        app.handle(.enter)
        await app.settle()
        app.redraw()
        #expect(backend.lines.contains { $0.contains("✗ the arguments must be a JSON object") })
        await client.close()
    }
}
