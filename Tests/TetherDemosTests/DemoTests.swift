import Testing
import TetherDemoContracts
import TetherDemos
import TetherJSON
import TetherState
import TetherTesting

/// Every demo ViewModel through `TestRoom`: each turn states the exact operations it sends to
/// clients, and TestRoom checks the document against the observables after each one.
@Suite("Demo ViewModels")
struct DemoTests {
    @Test func kindsAndScopesMatchTheProtocolDoc() {
        let scopes = Dictionary(uniqueKeysWithValues: Demos.kinds.map { ($0.name, $0.scope) })
        #expect(scopes == ["counter": .shared, "clock": .shared, "login": .perSession, "exchange": .shared,
                           "calculator": .shared, "gallery": .shared, "todo": .shared, "bench": .shared, "vote": .shared])
    }

    // MARK: Counter

    @Test func counter() throws {
        let room = TestRoom(Counter.self)
        #expect(room.state == ["count": 0])
        try room.send("increment", produces: [.replace(path: "/count", value: 1)])
        try room.send("increment", ["by": 5], produces: [.replace(path: "/count", value: 6)])
        try room.send("decrement", produces: [.replace(path: "/count", value: 5)])
        try room.send("reset", produces: [.replace(path: "/count", value: 0)])
        try room.send("reset")  // nothing changes: no operation, no version
        #expect(room.version == 4)
    }

    @Test func counterArgumentsAreStrict() throws {
        let room = TestRoom(Counter.self)
        room.send("increment", ["by": "x"], fails: .invalidArgs("expected integer at args.by, got string"))
        room.send("increment", ["bogus": 1], fails: .invalidArgs("unknown field args.bogus (known: by)"))
        room.send("decrement", ["by": 5], fails: .invalidArgs("unknown field args.by (decrement takes no arguments)"))
        room.send("fly", fails: .unknownAction("fly"))
        #expect(room.state == ["count": 0])
    }

    @Test func counterRefusesToOverflow() throws {
        let room = TestRoom(Counter.self, restoring: ["count": .int(Int.max - 1)])
        try room.send("increment", produces: [.replace(path: "/count", value: .int(Int.max))])
        room.send("increment", fails: .refused(reason: "overflow", code: .invalidArgs, message: "count would overflow"))
        let bottom = TestRoom(Counter.self, restoring: ["count": .int(Int.min)])
        bottom.send("decrement", fails: .refused(reason: "overflow", code: .invalidArgs, message: "count would overflow"))
    }

    // MARK: Clock

    @Test func clockTicksReplaceTheTime() throws {
        // A stored time no clock shows, so the first tick must replace it.
        let room = TestRoom(Clock.self, restoring: ["time": "--:--:--"])
        #expect(room.timerIntervals == [.milliseconds(250)])
        room.tick(timer: 0, produces: { state in [.replace(path: "/time", value: state["time"] ?? nil)] })
        let time = try #require(room.state["time"]?.stringValue)
        #expect(time.split(separator: ":").map(\.count) == [2, 2, 2], "HH:mm:ss, got \(time)")
        // Within the same second a tick changes nothing and sends nothing.
        room.tick(timer: 0, produces: { state in state["time"] == .string(time) ? [] : [.replace(path: "/time", value: state["time"] ?? nil)] })
        room.send("tick", fails: .unknownAction("tick"))
    }

    // MARK: Login

    static let signedOut: JSON = ["email": "", "passwordLength": 0, "signInEnabled": false, "errorMessage": nil, "signedIn": false]

    @Test func loginFollowsTheSeedsRules() throws {
        let room = TestRoom(Login.self)
        #expect(room.state == Self.signedOut)
        try room.send("setEmail", ["value": "a@b.c"], produces: [.replace(path: "/email", value: "a@b.c")])
        // A short password: the button stays disabled and the seeds' message shows before any press.
        try room.send("setPassword", ["value": "abc"], produces: [
            .replace(path: "/passwordLength", value: 3), .replace(path: "/errorMessage", value: .string(Login.shortPasswordMessage)),
        ])
        room.send(LoginContract.signIn, fails: .notSignable)
        try room.send("setPassword", ["value": "abcdef"], produces: [
            .replace(path: "/passwordLength", value: 6), .replace(path: "/errorMessage", value: nil), .replace(path: "/signInEnabled", value: true),
        ])
        try room.send("signIn", produces: [.replace(path: "/signedIn", value: true)],
                      state: ["email": "a@b.c", "passwordLength": 6, "signInEnabled": true, "errorMessage": nil, "signedIn": true])
        #expect(!String(decoding: room.state.encoded(), as: UTF8.self).contains("abcdef"), "the password never enters the state")
    }

    @Test func loginWantsAnEmailAddress() throws {
        let room = TestRoom(Login.self)
        try room.send("setPassword", ["value": "abcdef"], produces: [.replace(path: "/passwordLength", value: 6)])
        // "x" signed in as "x" before.
        try room.send("setEmail", ["value": "x"], produces: [
            .replace(path: "/errorMessage", value: .string(Login.emailMessage)), .replace(path: "/email", value: "x"),
        ])
        room.send(LoginContract.signIn, fails: .notSignable)
        for bad in ["x@", "@b.c", "a@b", "a@.b", "a@b.", "a b@c.d", "a@b@c.d", "a@b..c"] {
            #expect(!Login.isEmailAddress(bad), "\(bad)")
        }
        try room.send("setEmail", ["value": "ann@example.com"], produces: [
            .replace(path: "/errorMessage", value: nil), .replace(path: "/signInEnabled", value: true),
            .replace(path: "/email", value: "ann@example.com"),
        ])
    }

    @Test func loginRefusesSignInWithAnEmptyField() throws {
        let room = TestRoom(Login.self)
        try room.send("setEmail", ["value": "a@b.c"], produces: [.replace(path: "/email", value: "a@b.c")])
        room.send(LoginContract.signIn, fails: .notSignable)
        room.send("setEmail", ["value": 1], fails: .invalidArgs("expected string at args.value, got number"))
    }

    @Test func loginSignsOut() throws {
        let room = TestRoom(Login.self)
        try room.send("setEmail", ["value": "a@b.c"], produces: [.replace(path: "/email", value: "a@b.c")])
        try room.send("setPassword", ["value": "abcdef"],
                      produces: [.replace(path: "/passwordLength", value: 6), .replace(path: "/signInEnabled", value: true)])
        try room.send("signIn", produces: [.replace(path: "/signedIn", value: true)])
        try room.send("signOut", produces: [
            .replace(path: "/signedIn", value: false), .replace(path: "/signInEnabled", value: false),
            .replace(path: "/email", value: ""), .replace(path: "/passwordLength", value: 0),
        ], state: Self.signedOut)
    }

    // MARK: Exchange
    // A contract's derived members are bound to their sources in `init`, before the contract
    // publishes the sources: a turn lists their operations first (a client applies it whole).

    @Test func exchangeResultFollowsTheAmount() throws {
        let room = TestRoom(Exchange.self)
        #expect(room.state == ["amount": "", "from": "USD", "to": "KRW", "rate": 1350.0, "result": "", "error": nil,
                               "currencies": ["USD", "KRW", "EUR", "JPY", "GBP"]])
        try room.send("setAmount", ["value": "2"], produces: [.replace(path: "/result", value: "2700.00"), .replace(path: "/amount", value: "2")])
        try room.send("setAmount", ["value": "1.5"], produces: [.replace(path: "/result", value: "2025.00"), .replace(path: "/amount", value: "1.5")])
        try room.send("setRate", ["value": 0.5], produces: [.replace(path: "/result", value: "0.75"), .replace(path: "/rate", value: 0.5)])
        try room.send("setAmount", ["value": ""], produces: [.replace(path: "/result", value: ""), .replace(path: "/amount", value: "")])
    }

    @Test func exchangeSaysWhyItCannotReadTheAmount() throws {
        let room = TestRoom(Exchange.self)
        try room.send("setAmount", ["value": "1,000"], produces: [
            .replace(path: "/error", value: "\"1,000\" has a comma: write 1000 without separators"),
            .replace(path: "/amount", value: "1,000"),
        ])
        let notANumber = "is not a number: use digits and at most one decimal point"
        // The rule is what the message says: digits and at most one decimal point, no sign.
        for bad in ["abc", "1e20", "1-", "+5", "1.2.3"] {
            try room.send("setAmount", ["value": .string(bad)], produces: [
                .replace(path: "/error", value: .string("\"\(bad)\" \(notANumber)")), .replace(path: "/amount", value: .string(bad)),
            ])
        }
        try room.send("setAmount", ["value": "-5"], produces: [
            .replace(path: "/error", value: "\"-5\" is negative: type an amount without a sign"),
            .replace(path: "/amount", value: "-5"),
        ])
        try room.send("setAmount", ["value": "99999999999999"], produces: [
            .replace(path: "/error", value: "\"99999999999999\" is too large to convert"),
            .replace(path: "/amount", value: "99999999999999"),
        ])
        try room.send("setAmount", ["value": "3"], produces: [
            .replace(path: "/result", value: "4050.00"), .replace(path: "/error", value: nil), .replace(path: "/amount", value: "3"),
        ])
    }

    @Test func exchangeSwitchesThePair() throws {
        let room = TestRoom(Exchange.self)
        try room.send("setAmount", ["value": "3"], produces: [.replace(path: "/result", value: "4050.00"), .replace(path: "/amount", value: "3")])
        try room.send("setPair", ["from": "EUR", "to": "USD"], produces: [
            .replace(path: "/from", value: "EUR"), .replace(path: "/to", value: "USD"),
            .replace(path: "/result", value: "3.26"), .replace(path: "/rate", value: 1.087),
        ])
        room.send(ExchangeContract.setPair, .init(from: "XXX", to: "USD"), fails: .unknownCurrency)
        room.send("setPair", ["from": "EUR"], fails: .invalidArgs("missing field args.to"))
        room.send(ExchangeContract.setRate, .init(value: -1), fails: .badRate)
        room.send("setAmount", ["value": 5], fails: .invalidArgs("expected string at args.value, got number"))
        #expect(room.state["rate"] == 1.087)
    }

    @Test func exchangeRefusesAPairOfOneCurrency() throws {
        let room = TestRoom(Exchange.self)
        // Accepted before, then setRate gave "10 EUR = 20.00 EUR".
        room.send(ExchangeContract.setPair, .init(from: "EUR", to: "EUR"), fails: .samePair, message: "from and to must be two different currencies (both are EUR)")
        #expect(room.state["from"] == "USD" && room.state["to"] == "KRW")
    }

    // MARK: Calculator

    /// Presses each key of `keys` (no `=`): each appends itself to the display.
    private func type(_ keys: String, into room: TestRoom<Calculator>, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for key in keys {
            let display = (room.state["display"]?.stringValue ?? "") + String(key)
            try room.send("press", ["key": .string(String(key))], produces: [.replace(path: "/display", value: .string(display))],
                          sourceLocation: sourceLocation)
        }
    }

    /// `=`: the expression and its result join the history, and the display shows the result
    /// (no operation when it already does: `2=`).
    private func equals(_ room: TestRoom<Calculator>, gives result: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expression = room.state["display"]?.stringValue ?? ""
        let historyCount = room.state["history"]?.arrayValue?.count ?? 0
        let entry = PatchOperation.add(path: JSONPointer(tokens: ["history", "\(historyCount)"]), value: .string("\(expression) = \(result)"))
        try room.send("press", ["key": "="], produces: expression == result ? [entry] : [entry, .replace(path: "/display", value: .string(result))],
                      sourceLocation: sourceLocation)
    }

    private func clear(_ room: TestRoom<Calculator>, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try room.send("press", ["key": "clear"], produces: room.state["display"] == "" ? [] : [.replace(path: "/display", value: "")],
                      sourceLocation: sourceLocation)
    }

    @Test func calculatorEvaluatesWithPrecedenceAndDecimals() throws {
        let room = TestRoom(Calculator.self)
        #expect(room.state == ["display": "", "history": []])
        try type("12+3*4", into: room)
        try equals(room, gives: "24")
        #expect(room.state["history"] == ["12+3*4 = 24"])
        for (expression, result) in [("0.1+0.2", "0.3"), ("7%3-10/4", "-1.5"), ("-7%3", "-1")] {
            try clear(room)
            try type(expression, into: room)
            try equals(room, gives: result)
        }
        try clear(room)
        try type("12", into: room)
        try room.send("press", ["key": "back"], produces: [.replace(path: "/display", value: "1")])
        room.send(CalculatorContract.press, .init(key: "sqrt"), fails: .unknownKey, message: "unknown key \"sqrt\"; keys are 0-9 + - * / % . back clear =")
    }

    @Test func calculatorShowsErrorInsteadOfCrashing() throws {
        let room = TestRoom(Calculator.self)
        for (expression, why) in [("1/0", "division by zero"), ("5%0", "division by zero"), ("1++", "not a complete expression"),
                                  ("*2", "not a complete expression"), ("1..2", "not a complete expression"),
                                  ("3-", "not a complete expression"), (".", "not a complete expression")] {
            try clear(room)
            try type(expression, into: room)
            try room.send("press", ["key": "="], produces: [.replace(path: "/display", value: .string("Error: \(why)"))])
        }
        #expect(room.state["history"] == [], "an error adds nothing to the history")
        // Typing after an error starts over.
        try room.send("press", ["key": "2"], produces: [.replace(path: "/display", value: "2")])
        try equals(room, gives: "2")
        try type("+1", into: room)
        try equals(room, gives: "3")
        #expect(room.state["history"] == ["2 = 2", "2+1 = 3"])
    }

    @Test func aDigitAfterEqualsStartsANewNumber() throws {
        let room = TestRoom(Calculator.self)
        try type("1+1", into: room)
        try equals(room, gives: "2")
        try room.send("press", ["key": "5"], produces: [.replace(path: "/display", value: "5")])
        try type("+1", into: room)
        try equals(room, gives: "6")
        try type("*3", into: room)  // an operator after = continues from the result
        try equals(room, gives: "18")
    }

    @Test func calculatorIsExactPast38Digits() throws {
        let room = TestRoom(Calculator.self)
        let big = String(repeating: "9", count: 40)
        for (expression, result) in [("\(big)+1", "1" + String(repeating: "0", count: 40)),
                                     ("123456789012345678901234567890*1000000000000", "123456789012345678901234567890000000000000"),
                                     ("1/3", "0.3333333333"), ("2/3", "0.6666666667")] {
            try clear(room)
            try type(expression, into: room)
            try equals(room, gives: result)
        }
        try clear(room)
        try type("\(String(repeating: "9", count: 59))/7", into: room)  // 58 digits and 10 decimals
        try room.send("press", ["key": "="], produces: [.replace(path: "/display", value: "Error: result too long")])
    }

    // MARK: Gallery

    @Test func galleryCyclesThreePeople() throws {
        let room = TestRoom(Gallery.self)
        #expect(room.state["index"] == 0 && room.state["count"] == 3 && room.state["name"] == "Ada Lovelace")
        let firstPicture = try #require(room.state["picture"]?.stringValue)
        #expect(firstPicture.contains("\n"))
        func step(_ action: String, to index: Int, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            try room.send(action, produces: { state in
                [.replace(path: "/name", value: .string(name)), .replace(path: "/picture", value: state["picture"] ?? nil),
                 .replace(path: "/index", value: .int(index))]
            }, sourceLocation: sourceLocation)
        }
        try step("next", to: 1, "Alan Turing")
        #expect(room.state["picture"]?.stringValue != firstPicture, "each person has a picture of their own")
        try step("next", to: 2, "Grace Hopper")
        try step("next", to: 0, "Ada Lovelace")
        #expect(room.state["picture"]?.stringValue == firstPicture)
        try step("previous", to: 2, "Grace Hopper")
        room.send("next", ["by": 2], fails: .invalidArgs("unknown field args.by (next takes no arguments)"))
    }

    // MARK: Todo

    @Test func todoPatchesAddressSingleItems() throws {
        let room = TestRoom(Todo.self, room: "todo:team-a")
        try room.send("add", ["title": "milk"], produces: [.add(path: "/items/0", value: ["id": "t1", "title": "milk", "done": false])])
        try room.send("add", ["title": " eggs "], produces: [.add(path: "/items/1", value: ["id": "t2", "title": "eggs", "done": false])])
        try room.send("add", ["title": "bread"], produces: [.add(path: "/items/2", value: ["id": "t3", "title": "bread", "done": false])])
        try room.send("toggle", ["id": "t2"], produces: [.replace(path: "/items/1/done", value: true)])
        try room.send("rename", ["id": "t3", "title": "rye"], produces: [.replace(path: "/items/2/title", value: "rye")])
        try room.send("remove", ["id": "t1"], produces: [.remove(path: "/items/0")])
        try room.send("clearCompleted", produces: [.remove(path: "/items/0")], state: ["items": [["id": "t3", "title": "rye", "done": false]]])
        room.send(TodoContract.toggle, .init(id: "zz"), fails: .noSuchItem, message: "no item with id \"zz\"")
        room.send(TodoContract.add, .init(title: "  "), fails: .emptyTitle)
        room.send("rename", ["id": "t3"], fails: .invalidArgs("missing field args.title"))
    }

    @Test func todoIDsStayUniqueAfterARestart() throws {
        let room = TestRoom(Todo.self, restoring: ["items": [["id": "t7", "title": "kept", "done": true]]])
        try room.send("add", ["title": "new"], produces: [.add(path: "/items/1", value: ["id": "t8", "title": "new", "done": false])])
    }

    // MARK: Bench and limits

    @Test func benchSetsOneFieldPerAction() throws {
        let room = TestRoom(Bench.self)
        try room.send("set", ["key": "a", "value": ["sent": 1]], produces: [.add(path: "/fields/a", value: ["sent": 1])])
        try room.send("set", ["key": "a", "value": nil], produces: [.replace(path: "/fields/a", value: nil)])
        room.send("set", ["key": "a"], fails: .invalidArgs("missing field args.value"))
    }

    @Test func aTurnPastTheStateLimitIsTakenBack() throws {
        let room = TestRoom(Bench.self, maxStateBytes: 100)
        try room.send("set", ["key": "a", "value": "small"], produces: [.add(path: "/fields/a", value: "small")])
        room.send("set", ["key": "b", "value": .string(String(repeating: "x", count: 200))],
                  fails: .tooLarge("refused: its patch would exceed the server's limit of 100 bytes (--max-state-bytes); nothing changed"))
        #expect(room.state == ["fields": ["a": "small"]])
        #expect(room.version == 1)
    }

    @Test func faultyFailsOnTheServersSide() throws {
        let room = TestRoom(Faulty.self)
        let error = #expect(throws: (any Error).self) { try room.send("fail") }
        #expect(!(error is ActionError), "a non-ActionError: clients get `internal`")
    }
}
