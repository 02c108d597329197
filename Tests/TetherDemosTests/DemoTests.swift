import Testing
import TetherDemos
import TetherJSON
import TetherState

private func host(_ kind: String, room: String? = nil) throws -> ViewModelHost {
    let kind = try #require(Demos.kinds.first { $0.name == kind })
    return kind.instantiate(room: room ?? kind.name)
}

/// Runs one action and returns the operations of its turn.
@discardableResult
private func act(_ host: ViewModelHost, _ name: String, _ args: JSON? = nil) throws -> [PatchOperation] {
    try host.perform(name, args: args)
    return host.takeChanges()
}

@Suite("Demo ViewModels")
struct DemoTests {
    @Test func kindsAndScopesMatchTheSpec() {
        let scopes = Dictionary(uniqueKeysWithValues: Demos.kinds.map { ($0.name, $0.scope) })
        #expect(scopes == ["counter": .shared, "clock": .shared, "login": .perSession, "exchange": .shared,
                           "calculator": .shared, "gallery": .shared, "todo": .shared, "bench": .shared])
    }

    @Test func counter() throws {
        let counter = try host("counter")
        #expect(counter.state == ["count": 0])
        #expect(try act(counter, "increment") == [.replace(path: "/count", value: 1)])
        try act(counter, "increment", ["by": 5])
        try act(counter, "decrement")
        #expect(counter.state == ["count": 5])
        try act(counter, "reset")
        #expect(counter.state == ["count": 0])
        #expect(throws: ActionError.self) { try counter.perform("increment", args: ["by": "x"]) }
        try counter.perform("increment", args: ["by": .int(Int.max)])
        #expect(throws: ActionError.invalidArgs("count would overflow")) { try counter.perform("increment", args: ["by": 1]) }
    }

    @Test func clockShowsTheTimeAndTicks() throws {
        let clock = try host("clock")
        let time = try #require(clock.state["time"]?.stringValue)
        #expect(time.count == 8)
        #expect(time.split(separator: ":").count == 3)
        #expect(clock.timers.count == 1)
        clock.timers[0].tick()  // within the same second: no change, no patch
        #expect(clock.takeChanges().count <= 1)
    }

    @Test func loginFollowsTheSeedsRules() throws {
        let login = try host("login")
        #expect(login.state == ["email": "", "passwordLength": 0, "signInEnabled": false, "errorMessage": nil, "signedIn": false])
        #expect(try act(login, "setEmail", ["value": "a@b.c"]) == [.replace(path: "/email", value: "a@b.c")])
        #expect(login.state["signInEnabled"] == false)
        let ops = try act(login, "setPassword", ["value": "abc"])
        #expect(ops == [.replace(path: "/passwordLength", value: 3), .replace(path: "/signInEnabled", value: true)])
        try act(login, "signIn")
        #expect(login.state["errorMessage"] == "6자리 이상 비밀번호를 입력해주세요.")
        #expect(login.state["signedIn"] == false)
        try act(login, "setPassword", ["value": "abcdef"])
        #expect(login.state["errorMessage"] == .some(.null))
        try act(login, "signIn")
        #expect(login.state["signedIn"] == true)
        #expect(login.state["passwordLength"] == 6)
        #expect(!String(decoding: login.state.encoded(), as: UTF8.self).contains("abcdef"), "the password never enters the state")
    }

    @Test func loginRefusesSignInWithAnEmptyField() throws {
        let login = try host("login")
        try act(login, "setEmail", ["value": "a@b.c"])
        #expect(throws: ActionError.self) { try login.perform("signIn", args: nil) }
    }

    @Test func exchangeResultFollowsTheAmountAndSaysWhyItCannot() throws {
        let exchange = try host("exchange")
        #expect(exchange.state == ["amount": "", "from": "USD", "to": "KRW", "rate": 1350.0, "result": "", "error": nil,
                                   "currencies": ["USD", "KRW", "EUR", "JPY", "GBP"]])
        try act(exchange, "setAmount", ["value": "2"])
        #expect(exchange.state["result"] == "2700.00")
        try act(exchange, "setAmount", ["value": "1.5"])
        #expect(exchange.state["result"] == "2025.00")
        for (bad, reason) in [("1,000", "comma"), ("abc", "not a number"), ("1e20", "not a number"), ("1-", "not a number"),
                              ("99999999999999", "too large")] {
            try act(exchange, "setAmount", ["value": .string(bad)])
            #expect(exchange.state["result"] == "", "\(bad)")
            #expect(exchange.state["error"]?.stringValue?.contains(reason) == true, "\(bad): \(String(describing: exchange.state["error"]))")
        }
        try act(exchange, "setAmount", ["value": "3"])
        #expect(exchange.state["error"] == .some(.null))
        try act(exchange, "setRate", ["value": 0.5])
        #expect(exchange.state["result"] == "1.50")
        try act(exchange, "setPair", ["from": "EUR", "to": "USD"])
        #expect(exchange.state["from"] == "EUR" && exchange.state["to"] == "USD")
        #expect(exchange.state["rate"] == 1.087 && exchange.state["result"] == "3.26")
        #expect(throws: ActionError.self) { try exchange.perform("setPair", args: ["from": "XXX", "to": "USD"]) }
        #expect(throws: ActionError.self) { try exchange.perform("setRate", args: ["value": -1]) }
        #expect(throws: ActionError.self) { try exchange.perform("setAmount", args: ["value": 5]) }
    }

    @Test func loginSignsOut() throws {
        let login = try host("login")
        try act(login, "setEmail", ["value": "a@b.c"])
        try act(login, "setPassword", ["value": "abcdef"])
        try act(login, "signIn")
        #expect(login.state["signedIn"] == true)
        try act(login, "signOut")
        #expect(login.state == ["email": "", "passwordLength": 0, "signInEnabled": false, "errorMessage": nil, "signedIn": false])
    }

    private func press(_ calculator: ViewModelHost, _ keys: String) throws {
        var tokens: [String] = []
        for character in keys { tokens.append(String(character)) }
        for key in tokens { try act(calculator, "press", ["key": .string(key)]) }
    }

    @Test func calculatorEvaluatesWithPrecedenceAndDecimals() throws {
        let calculator = try host("calculator")
        try press(calculator, "12+3*4=")
        #expect(calculator.state["display"] == "24")
        #expect(calculator.state["history"] == ["12+3*4 = 24"])
        try act(calculator, "press", ["key": "clear"])
        try press(calculator, "0.1+0.2=")
        #expect(calculator.state["display"] == "0.3")
        try act(calculator, "press", ["key": "clear"])
        try press(calculator, "7%3-10/4=")
        #expect(calculator.state["display"] == "-1.5")
        try act(calculator, "press", ["key": "clear"])
        try press(calculator, "12")
        try act(calculator, "press", ["key": "back"])
        #expect(calculator.state["display"] == "1")
    }

    @Test func calculatorShowsErrorInsteadOfCrashing() throws {
        let calculator = try host("calculator")
        for (expression, why) in [("1/0=", "division by zero"), ("5%0=", "division by zero"), ("1++=", "not a complete expression"),
                                  ("*2=", "not a complete expression"), ("1..2=", "not a complete expression"),
                                  ("3-=", "not a complete expression"), (".=", "not a complete expression")] {
            try act(calculator, "press", ["key": "clear"])
            try press(calculator, expression)
            #expect(calculator.state["display"] == .string("Error: \(why)"), "\(expression)")
        }
        try press(calculator, "2=")
        #expect(calculator.state["display"] == "2", "typing after Error starts over")
        #expect(throws: ActionError.self) { try calculator.perform("press", args: ["key": "sqrt"]) }
        let historyOps = try { () throws -> [PatchOperation] in
            try act(calculator, "press", ["key": "+"])
            try act(calculator, "press", ["key": "1"])
            return try act(calculator, "press", ["key": "="])
        }()
        #expect(historyOps.contains(.add(path: "/history/1", value: "2+1 = 3")))
    }

    @Test func aDigitAfterEqualsStartsANewNumber() throws {
        let calculator = try host("calculator")
        try press(calculator, "1+1=5")
        #expect(calculator.state["display"] == "5")
        try press(calculator, "+1=*3=")
        #expect(calculator.state["display"] == "18", "an operator after = continues from the result")
    }

    @Test func calculatorIsExactPast38Digits() throws {
        let calculator = try host("calculator")
        let big = String(repeating: "9", count: 40)
        try press(calculator, "\(big)+1=")
        #expect(calculator.state["display"] == .string("1" + String(repeating: "0", count: 40)))
        try act(calculator, "press", ["key": "clear"])
        try press(calculator, "123456789012345678901234567890*1000000000000=")
        #expect(calculator.state["display"] == "123456789012345678901234567890000000000000")
        try act(calculator, "press", ["key": "clear"])
        try press(calculator, "1/3=")
        #expect(calculator.state["display"] == "0.3333333333")
        try act(calculator, "press", ["key": "clear"])
        try press(calculator, "2/3=")
        #expect(calculator.state["display"] == "0.6666666667")
        try act(calculator, "press", ["key": "clear"])
        try press(calculator, "-7%3=")
        #expect(calculator.state["display"] == "-1")
        try act(calculator, "press", ["key": "clear"])
        try press(calculator, "\(String(repeating: "9", count: 59))/7=")  // 58 digits and 10 decimals
        #expect(calculator.state["display"] == "Error: result too long")
    }

    @Test func galleryCyclesThreePeople() throws {
        let gallery = try host("gallery")
        let first = try #require(gallery.state["name"]?.stringValue)
        #expect(gallery.state["picture"]?.stringValue?.contains("\n") == true)
        try act(gallery, "next")
        try act(gallery, "next")
        #expect(gallery.state["index"] == 2)
        try act(gallery, "next")
        #expect(gallery.state["index"] == 0)
        #expect(gallery.state["name"]?.stringValue == first)
        try act(gallery, "previous")
        #expect(gallery.state["index"] == 2)
    }

    @Test func todoPatchesAddressSingleItems() throws {
        let todo = try host("todo", room: "todo:team-a")
        #expect(try act(todo, "add", ["title": "milk"]) == [.add(path: "/items/0", value: ["id": "t1", "title": "milk", "done": false])])
        try act(todo, "add", ["title": "eggs"])
        try act(todo, "add", ["title": "bread"])
        #expect(try act(todo, "toggle", ["id": "t2"]) == [.replace(path: "/items/1/done", value: true)])
        #expect(try act(todo, "rename", ["id": "t3", "title": "rye"]) == [.replace(path: "/items/2/title", value: "rye")])
        #expect(try act(todo, "remove", ["id": "t1"]) == [.remove(path: "/items/0")])
        #expect(try act(todo, "clearCompleted") == [.remove(path: "/items/0")])
        #expect(todo.state == ["items": [["id": "t3", "title": "rye", "done": false]]])
        #expect(throws: ActionError.invalidArgs("no item with id \"zz\"")) { try todo.perform("toggle", args: ["id": "zz"]) }
        #expect(throws: ActionError.invalidArgs("title must not be empty")) { try todo.perform("add", args: ["title": "  "]) }
    }

    @Test func benchSetsOneFieldPerAction() throws {
        let bench = try host("bench")
        #expect(try act(bench, "set", ["key": "a", "value": ["sent": 1]]) == [.add(path: "/fields/a", value: ["sent": 1])])
        #expect(try act(bench, "set", ["key": "a", "value": nil]) == [.replace(path: "/fields/a", value: nil)])
        #expect(throws: ActionError.self) { try bench.perform("set", args: ["key": "a"]) }
    }
}
