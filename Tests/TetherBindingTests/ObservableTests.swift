import Testing
import TetherBinding

@Suite("Observable")
struct ObservableTests {
    @Test func bindCallsAtOnceThenOnEveryChange() {
        let name = Observable("a")
        var seen: [String] = []
        let token = name.bind { seen.append($0) }
        name.value = "b"
        name.value = "b"  // an equal value still notifies, like the seeds' didSet
        #expect(seen == ["a", "b", "b"])
        _ = token
    }

    @Test func severalListenersAllHearEveryChangeInBindOrder() {
        let count = Observable(0)
        var log: [String] = []
        let first = count.bind { log.append("first \($0)") }
        let second = count.bind { log.append("second \($0)") }
        count.value = 1
        #expect(log == ["first 0", "second 0", "first 1", "second 1"])
        #expect(count.listenerCount == 2)
        _ = (first, second)
    }

    @Test func cancelledTokenStopsCallsAndOthersContinue() {
        let count = Observable(0)
        var a: [Int] = [], b: [Int] = []
        let tokenA = count.bind { a.append($0) }
        let tokenB = count.bind { b.append($0) }
        tokenA.cancel()
        tokenA.cancel()  // idempotent
        count.value = 5
        #expect(a == [0])
        #expect(b == [0, 5])
        #expect(count.listenerCount == 1)
        _ = tokenB
    }

    @Test func releasedTokenStopsCalls() {
        let count = Observable(0)
        var seen: [Int] = []
        do {
            let token = count.bind { seen.append($0) }
            count.value = 1
            _ = token
        }
        count.value = 2
        #expect(seen == [0, 1])
        #expect(count.listenerCount == 0)
    }

    @Test func listenerCancellingAnotherDuringNotificationIsNotCalled() {
        let count = Observable(0)
        var calls: [String] = []
        var second: Cancellable?
        let first = count.observe { _ in calls.append("first"); second?.cancel() }
        second = count.observe { _ in calls.append("second") }
        count.value = 1
        #expect(calls == ["first"])
        _ = first
    }

    @Test func bagCancelsEverythingItHolds() {
        let count = Observable(0)
        var seen: [Int] = []
        var bag: CancellableBag? = CancellableBag()
        count.bind { seen.append($0) }.store(in: bag!)
        count.bind { seen.append($0 * 10) }.store(in: bag!)
        count.value = 1
        bag = nil
        count.value = 2
        #expect(seen == [0, 0, 1, 10])
    }

    @Test func mapFollowsTheSource() {
        let celsius = Observable(0.0)
        let fahrenheit = celsius.map { $0 * 9 / 5 + 32 }
        var seen: [Double] = []
        let token = fahrenheit.bind { seen.append($0) }
        celsius.value = 100
        #expect(seen == [32, 212])
        #expect(fahrenheit.value == 212)
        _ = token
    }

    @Test func derivedChainStaysAliveWhileItsTokenDoes() {
        let source = Observable(1)
        var seen: [String] = []
        // Only the token is kept: the intermediate observables must survive through it.
        let token = source.map { $0 * 2 }.map { "v\($0)" }.bind { seen.append($0) }
        source.value = 3
        #expect(seen == ["v2", "v6"])
        token.cancel()
        source.value = 4
        #expect(seen == ["v2", "v6"])
        #expect(source.listenerCount == 0)
    }

    @Test func removeDuplicatesDropsEqualValues() {
        let text = Observable("x")
        var seen: [String] = []
        let token = text.removeDuplicates().bind { seen.append($0) }
        text.value = "x"
        text.value = "y"
        text.value = "y"
        text.value = "x"
        #expect(seen == ["x", "y", "x"])
        _ = token
    }

    @Test func combineLatestOfTwoUpdatesOnEitherSide() {
        let a = Observable(1), b = Observable("b")
        var seen: [String] = []
        let token = combineLatest(a, b).bind { seen.append("\($0)\($1)") }
        a.value = 2
        b.value = "c"
        #expect(seen == ["1b", "2b", "2c"])
        _ = token
    }

    @Test func combineLatestOfThree() {
        let a = Observable(1), b = Observable(2), c = Observable(3)
        var sums: [Int] = []
        let token = combineLatest(a, b, c).map { $0 + $1 + $2 }.bind { sums.append($0) }
        a.value = 10
        b.value = 20
        c.value = 30
        #expect(sums == [6, 15, 33, 60])
        _ = token
    }

    /// The seeds' RxSwift rule, written with plain bindings.
    @Test func signInEnabledRule() {
        let email = Observable(""), password = Observable("")
        let signInEnabled = combineLatest(email, password)
            .map { !$0.isEmpty && !$1.isEmpty }
            .removeDuplicates()
        var seen: [Bool] = []
        let token = signInEnabled.bind { seen.append($0) }
        email.value = "a@b.c"
        #expect(signInEnabled.value == false)
        password.value = "s"
        #expect(signInEnabled.value == true)
        password.value = "secret"  // still enabled: no duplicate notification
        email.value = ""
        #expect(signInEnabled.value == false)
        #expect(seen == [false, true, false])
        _ = token
    }
}

@Suite("ObservableList and ObservableMap")
struct ObservableCollectionTests {
    @Test func listEmitsSingleElementEvents() {
        let list = ObservableList(["a", "b"])
        var events: [String] = []
        let token = list.observeChanges { change in
            switch change {
            case .insert(let i, let e): events.append("insert \(i) \(e)")
            case .remove(let i, let e): events.append("remove \(i) \(e)")
            case .replace(let i, let old, let new): events.append("replace \(i) \(old)->\(new)")
            }
        }
        list.append("c")
        list.insert("z", at: 0)
        list[1] = "A"
        list.remove(at: 2)
        list.update(at: 0) { $0 += "!" }
        #expect(events == ["insert 2 c", "insert 0 z", "replace 1 a->A", "remove 2 b", "replace 0 z->z!"])
        #expect(Array(list) == ["z!", "A", "c"])
        _ = token
    }

    @Test func listRemoveAllEmitsOneRemovePerElementWithValidIndices() {
        let list = ObservableList([1, 2, 3, 4, 5, 6])
        var mirror = list.elements
        let token = list.observeChanges { change in
            guard case .remove(let i, let e) = change else { Issue.record("unexpected \(change)"); return }
            #expect(mirror[i] == e)
            mirror.remove(at: i)
        }
        list.removeAll { $0 % 2 == 0 }
        #expect(mirror == [1, 3, 5])
        #expect(list.elements == [1, 3, 5])
        _ = token
    }

    @Test func listBindGetsWholeElementsAtOnceAndAfterChanges() {
        let list = ObservableList<Int>()
        var counts: [Int] = []
        let token = list.bind { counts.append($0.count) }
        list.append(1)
        list.append(2)
        #expect(counts == [0, 1, 2])
        _ = token
    }

    @Test func mapEmitsSetAndRemoveByKey() {
        let map = ObservableMap<String, Int>(["a": 1])
        var events: [String] = []
        let token = map.observeChanges { change in
            switch change {
            case .set(let key, let value, let old): events.append("set \(key)=\(value) old \(old.map(String.init) ?? "nil")")
            case .remove(let key, let old): events.append("remove \(key) old \(old)")
            }
        }
        map["b"] = 2
        map["a"] = 10
        map["b"] = nil
        map.removeValue(forKey: "missing")  // nothing to remove: no event
        #expect(events == ["set b=2 old nil", "set a=10 old 1", "remove b old 2"])
        #expect(map.dictionary == ["a": 10])
        _ = token
    }

    @Test func cancelledCollectionTokensStopEvents() {
        let list = ObservableList<Int>()
        var count = 0
        let token = list.observeChanges { _ in count += 1 }
        list.append(1)
        token.cancel()
        list.append(2)
        #expect(count == 1)
    }
}
