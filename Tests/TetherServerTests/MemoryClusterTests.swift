import Dispatch
import Synchronization
import Testing
import TetherNATS
import TetherServer
import TetherTesting

/// The in-memory cluster transport keeps the NATS/JetStream rules the cluster's safety rests on
/// (Cluster/MemoryCluster.swift). Every node's deliveries wait in its own queue until the test
/// runs it, as a node's scheduler would.
@Suite("MemoryCluster: NATS and JetStream rules in memory")
struct MemoryClusterTests {
    // MARK: Messaging

    /// A queue group's message reaches one member only (NATS picks one; memory takes turns);
    /// a subscriber outside the group still gets every message.
    @Test func aQueueGroupsMessageReachesOneMember() throws {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b"), c = nodes.connect("c")
        let gotA = Recorder<String>(), gotB = Recorder<String>(), gotC = Recorder<String>()
        let subscriptions = [try a.subscribe("s", queueGroup: "owner") { gotA.add(text($0.data)) },
                             try b.subscribe("s", queueGroup: "owner") { gotB.add(text($0.data)) },
                             try c.subscribe("s") { gotC.add(text($0.data)) }]
        for word in ["1", "2", "3", "4"] { try c.publish("s", bytes(word)) }
        nodes.runAll()
        #expect(gotA.all.count + gotB.all.count == 4 && Set(gotA.all).isDisjoint(with: gotB.all), "each message to one member")
        #expect(!gotA.all.isEmpty && !gotB.all.isEmpty, "every member gets some")
        #expect(gotC.all == ["1", "2", "3", "4"])
        withExtendedLifetime(subscriptions) {}
    }

    @Test func publishReachesEverySubscriberInOrderUntilUnsubscribed() throws {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b")
        let gotA = Recorder<String>(), gotB = Recorder<String>()
        let subA = try a.subscribe("s") { gotA.add(text($0.data)) }
        var subB: (any ClusterSubscription)? = try b.subscribe("s") { gotB.add(text($0.data)) }
        _ = try b.subscribe("other") { gotB.add("other: " + text($0.data)) }  // released at once: gets nothing

        for word in ["1", "2", "3"] { try a.publish("s", bytes(word)) }
        try a.publish("other", bytes("x"))
        nodes.runAll()
        #expect(gotA.all == ["1", "2", "3"])  // the publisher's own subscription too
        #expect(gotB.all == ["1", "2", "3"])

        subB?.unsubscribe()
        try a.publish("s", bytes("4"))
        subB = nil
        try a.publish("s", bytes("5"))
        nodes.runAll()
        #expect(gotA.all == ["1", "2", "3", "4", "5"])
        #expect(gotB.all == ["1", "2", "3"])

        // Queued but not yet run when the subscription goes: dropped, as the C client does.
        try a.publish("s", bytes("6"))
        subA.unsubscribe()
        nodes.runAll()
        #expect(gotA.all == ["1", "2", "3", "4", "5"])
    }

    /// Nothing runs inside the node's own call: handlers and completions wait for its queue.
    @Test func deliveriesWaitUntilTheNodesQueueRuns() throws {
        let nodes = Nodes()
        let a = nodes.connect("a")
        let got = Recorder<String>()
        let subscription = try a.subscribe("s") { got.add(text($0.data)) }
        try a.publish("s", bytes("hello"))
        a.append("log", "x", id: "m", after: 0) {
            got.add("appended \($0)")
        }
        #expect(got.all.isEmpty)
        #expect(nodes.pending("a") == 2)
        nodes.run("a")
        #expect(got.all == ["hello", "appended success(1)"])
        withExtendedLifetime(subscription) {}
    }

    @Test func aRequestGetsTheAnswerAndStopsItsTimer() throws {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b")
        let subscription = try b.subscribe("service") { message in
            try? message.respond(bytes("answer to " + text(message.data)), headers: ["Kind": "reply"])
        }
        let replies = Recorder<Result<NATSMessage, NATSError>>()
        a.request("service", bytes("question"), timeout: .seconds(1)) { replies.add($0) }
        #expect(nodes.clock.activeTimerCount == 1)
        nodes.runAll()
        let reply = try #require(try replies.all.first?.get())
        #expect(replies.all.count == 1)
        #expect(text(reply.data) == "answer to question")
        #expect(reply.headers["Kind"] == "reply")
        #expect(reply.subject.hasPrefix("_INBOX.a."))
        #expect(nodes.clock.activeTimerCount == 0)
        nodes.clock.advance(by: .seconds(5))
        nodes.runAll()
        #expect(replies.all.count == 1)
        withExtendedLifetime(subscription) {}
    }

    @Test func aRequestNobodySubscribesToHasNoResponders() throws {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b")
        let errors = Recorder<NATSError?>()
        a.request("service", [], timeout: .seconds(1)) { errors.add($0.error) }
        // A subscriber that went away, or one on another subject, does not answer either.
        try b.subscribe("service") { _ in }.unsubscribe()
        let elsewhere = try b.subscribe("service.other") { _ in }
        a.request("service", [], timeout: .seconds(1)) { errors.add($0.error) }
        nodes.runAll()
        #expect(errors.all == [.noResponders(subject: "service"), .noResponders(subject: "service")])
        #expect(nodes.clock.activeTimerCount == 0)
        withExtendedLifetime(elsewhere) {}
    }

    /// A stopped node (its queue never runs) still subscribes: requests to it time out on the
    /// virtual clock, and its late answer is ignored.
    @Test func aRequestToAStoppedNodeTimesOutOnTheVirtualClock() throws {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b")
        let subscription = try b.subscribe("service") { try? $0.respond(bytes("late")) }
        let results = Recorder<Result<NATSMessage, NATSError>>()
        a.request("service", [], timeout: .seconds(2)) { results.add($0) }
        nodes.clock.advance(by: .milliseconds(1_999))
        nodes.run("a")
        #expect(results.all.isEmpty)
        nodes.clock.advance(by: .milliseconds(1))
        #expect(results.all.isEmpty)  // the timeout, too, waits for a's queue
        nodes.run("a")
        #expect(results.all.map(\.error) == [.timeout(subject: "service")])
        #expect(nodes.clock.activeTimerCount == 0)
        nodes.run("b")  // b wakes up and answers
        nodes.runAll()
        #expect(results.all.count == 1)
        withExtendedLifetime(subscription) {}
    }

    @Test func theFirstAnswerWins() throws {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b"), c = nodes.connect("c")
        let fromB = try b.subscribe("service") { try? $0.respond(bytes("b")) }
        let fromC = try c.subscribe("service") { try? $0.respond(bytes("c")) }
        let replies = Recorder<String>()
        a.request("service", [], timeout: .seconds(1)) { replies.add((try? $0.get()).map { text($0.data) } ?? "error") }
        nodes.run("c")  // c answers first although b subscribed first
        nodes.run("b")
        nodes.runAll()
        #expect(replies.all == ["c"])
        withExtendedLifetime((fromB, fromC)) {}
    }

    // MARK: Log

    @Test func aCheckedAppendNeedsTheSubjectsLastSequence() {
        let nodes = Nodes()
        let a = nodes.connect("a")
        let results = Recorder<Result<UInt64, NATSError>>()
        a.append("log.r", "one", id: "r/0", after: 0) { results.add($0) }
        a.append("log.r", "two", id: "r/0b", after: 0) { results.add($0) }
        a.append("log.r", "two", id: "r/1", after: 7) { results.add($0) }
        a.append("log.r", "two", id: "r/1", after: 1) { results.add($0) }
        nodes.runAll()
        #expect(results.all == [.success(1), .failure(.wrongLastSequence(current: 1)), .failure(.wrongLastSequence(current: 1)), .success(2)])
        #expect(nodes.cluster.storedMessages(subject: "log.r").map { text($0.data) } == ["one", "two"])
    }

    /// A stored id wins over the expected-sequence check (JetStream checks duplicates first), with
    /// the first append's sequence; nothing more is stored until the duplicate window has passed.
    @Test func aDuplicateIdGetsTheFirstSequenceAndStoresNothing() {
        let nodes = Nodes(duplicateWindow: .seconds(10))
        let a = nodes.connect("a")
        let results = Recorder<Result<UInt64, NATSError>>()
        a.append("log.r", "first", id: "slot", after: 0) { results.add($0) }
        a.append("log.r", "retry", id: "slot", after: 0) { results.add($0) }  // a retry of the same append: its sequence comes back
        a.append("log.r", "other", id: "slot", after: 1) { results.add($0) }  // the right sequence, but the id is stored
        nodes.runAll()
        #expect(results.all == [.success(1), .failure(.duplicate(sequence: 1)), .failure(.duplicate(sequence: 1))])
        #expect(nodes.cluster.storedMessages(subject: "log.r").map { text($0.data) } == ["first"])

        nodes.clock.advance(by: .seconds(10))
        a.append("log.r", "later", id: "slot", after: 1) { results.add($0) }
        nodes.runAll()
        #expect(results.all.last == .success(2))
    }

    /// Two nodes appending the next slot of the same subject at once, from two threads: exactly
    /// one wins, every time.
    @Test func twoNodesRacingForTheSameSlotHaveOneWinner() {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b")
        let subjects = (0..<300).map { "log.room\($0)" }
        let results = Recorder<(subject: String, result: Result<UInt64, NATSError>)>()
        DispatchQueue.concurrentPerform(iterations: 2) { writer in
            let node = writer == 0 ? a : b
            for (index, subject) in subjects.enumerated() {
                // Half the slots with the same id for both writers (the fence), half with their own.
                let id = index.isMultiple(of: 2) ? "\(subject)/0" : "\(subject)/0/\(writer)"
                node.append(subject, "\(writer)", id: id, after: 0) { results.add((subject, $0)) }
            }
        }
        nodes.runAll()
        for subject in subjects {
            let outcomes = results.all.filter { $0.subject == subject }.map(\.result)
            let winners = outcomes.filter { (try? $0.get()) != nil }
            #expect(outcomes.count == 2 && winners.count == 1, "\(subject): \(outcomes)")
            #expect(nodes.cluster.storedMessages(subject: subject).count == 1)
        }
    }

    /// Each stored message is republished with its sequence and the subject's previous one (not
    /// the stream's: another subject's appends come between), so a follower can see a gap.
    @Test func storedMessagesAreRepublishedWithTheirSequenceChain() throws {
        let nodes = Nodes(republish: { $0.hasPrefix("log.") ? "fan." + $0.dropFirst(4) : nil })
        let a = nodes.connect("a"), b = nodes.connect("b")
        let fanned = Recorder<NATSMessage>()
        let subscription = try b.subscribe("fan.r") { fanned.add($0) }
        let sequences = Recorder<UInt64>()
        for (index, subject) in ["log.r", "log.other", "log.r", "log.other", "log.r", "nolog.r"].enumerated() {
            let last = nodes.cluster.storedMessages(subject: subject).last?.sequence ?? 0
            a.append(subject, bytes("m\(index)"), headers: ["Tether-Kind": "turn"], messageID: "m\(index)", expectedLastSubjectSequence: last,
                     timeout: .seconds(1)) { if subject == "log.r" { sequences.add((try? $0.get()) ?? 0) } }
            nodes.runAll()
        }
        #expect(sequences.all == [1, 3, 5])
        #expect(fanned.all.map { text($0.data) } == ["m0", "m2", "m4"])
        #expect(fanned.all.map { $0.headers["Nats-Sequence"] } == ["1", "3", "5"])
        #expect(fanned.all.map { $0.headers["Nats-Last-Sequence"] } == ["0", "1", "3"])
        #expect(fanned.all.allSatisfy { $0.headers["Tether-Kind"] == "turn" && $0.subject == "fan.r" })
        // The log keeps the headers as appended.
        #expect(nodes.cluster.storedMessages(subject: "log.r").map(\.headers) == Array(repeating: ["Tether-Kind": "turn"] as NATSHeaders, count: 3))
        withExtendedLifetime(subscription) {}
    }

    @Test func aReadDeliversFromASequenceOnThenCompletes() {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b")
        for (index, subject) in ["log.r", "log.r", "log.other", "log.r", "log.r"].enumerated() {
            let last = nodes.cluster.storedMessages(subject: subject).last?.sequence ?? 0
            a.append(subject, "m\(index)", id: "m\(index)", after: last) { _ in }
        }
        nodes.runAll()
        let events = Recorder<String>()
        b.read(stream: "ROOMS", subject: "log.r", from: 2, handler: { events.add("\($0.sequence) \(text($0.data))") },
               completion: { events.add("done \($0)") })
        b.read(stream: "ROOMS", subject: "log.r", from: 6, handler: { events.add("\($0.sequence) \(text($0.data))") },
               completion: { events.add("done \($0)") })
        #expect(events.all.isEmpty)
        nodes.run("b")
        #expect(events.all == ["2 m1", "4 m3", "5 m4", "done success(Optional(5))", "done success(nil)"])
    }

    // MARK: Key-value

    @Test func aKeyIsCreatedOnceAndUpdatedAtItsRevision() {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b")
        let leasesA = a.keyValue(bucket: "leases", ttl: nil), leasesB = b.keyValue(bucket: "leases", ttl: nil)
        let results = Recorder<Result<UInt64, NATSError>>()
        let elsewhere = a.keyValue(bucket: "elsewhere", ttl: nil)
        // One call at a time: the results come through two nodes' queues.
        let calls: [() -> Void] = [
            { leasesA.create("room", bytes("a"), completion: results.add) },
            { leasesB.create("room", bytes("b"), completion: results.add) },
            { leasesA.update("room", bytes("a2"), lastRevision: 1, completion: results.add) },
            { leasesB.update("room", bytes("b2"), lastRevision: 1, completion: results.add) },
            { leasesB.put("other", bytes("x"), completion: results.add) },
            { elsewhere.put("room", bytes("y"), completion: results.add) },  // revisions are per bucket
        ]
        for call in calls {
            call()
            nodes.runAll()
        }
        #expect(results.all == [.success(1), .failure(.keyExists(key: "room")), .success(2),
                                .failure(.wrongRevision(key: "room", current: 2)), .success(3), .success(1)])
        let entry = Recorder<NATSKeyValue.Entry?>()
        leasesB.get("room") { entry.add(try! $0.get()) }
        leasesB.get("never") { entry.add(try! $0.get()) }
        nodes.runAll()
        #expect(entry.all == [NATSKeyValue.Entry(key: "room", value: bytes("a2"), revision: 2), nil])
    }

    /// A lease: gone `ttl` after its last write, kept alive by updates (the first opener's ttl counts).
    @Test func aKeyExpiresItsTTLAfterItsLastWrite() {
        let nodes = Nodes()
        let a = nodes.connect("a"), b = nodes.connect("b")
        let leasesA = a.keyValue(bucket: "leases", ttl: .seconds(3)), leasesB = b.keyValue(bucket: "leases", ttl: nil)
        let results = Recorder<Result<UInt64, NATSError>>()
        leasesA.create("room", bytes("a"), completion: results.add)
        nodes.clock.advance(by: .seconds(2))
        leasesA.update("room", bytes("a"), lastRevision: 1, completion: results.add)  // renewed at 2 s
        nodes.clock.advance(by: .milliseconds(2_999))  // 4.999 s: 2.999 s after the renewal
        leasesB.create("room", bytes("b"), completion: results.add)
        nodes.runAll()
        #expect(results.all == [.success(1), .success(2), .failure(.keyExists(key: "room"))])

        nodes.clock.advance(by: .milliseconds(1))  // 3 s after the last write: gone
        let entry = Recorder<NATSKeyValue.Entry?>()
        leasesB.get("room") { entry.add(try! $0.get()) }
        leasesA.update("room", bytes("a"), lastRevision: 2, completion: results.add)  // too late to renew
        leasesB.create("room", bytes("b"), completion: results.add)
        nodes.runAll()
        #expect(entry.all == [nil])
        #expect(results.all.dropFirst(3) == [.failure(.wrongRevision(key: "room", current: nil)), .success(3)])
    }

    @Test func aDeletedKeyCanBeCreatedAgain() async throws {
        let nodes = Nodes()
        let a = nodes.connect("a")
        let bucket = a.keyValue(bucket: "b", ttl: nil)
        let results = Recorder<String>()
        bucket.put("k", bytes("1")) { results.add("put \($0)") }
        bucket.put("kept", bytes("1")) { results.add("put \($0)") }
        bucket.delete("k") { results.add("delete \($0.map { "ok" })") }
        bucket.get("k") { results.add("get \($0)") }
        nodes.runAll()
        #expect(try await bucket.keys() == ["kept"])
        bucket.create("k", bytes("2")) { results.add("create \($0)") }
        bucket.put("bad key", bytes("2")) { results.add("put \($0)") }
        nodes.runAll()
        #expect(results.all == ["put success(1)", "put success(2)", "delete success(\"ok\")", "get success(nil)",
                                "create success(4)", "put failure(invalid KV key bad key)"])
        #expect(try await bucket.keys() == ["k", "kept"])
    }

    // MARK: Faults

    @Test func aDisconnectedNodeFailsItsCallsAndGetsNothingUntilReconnected() async throws {
        let nodes = Nodes(republish: { "fan." + $0 })
        let a = nodes.connect("a"), b = nodes.connect("b")
        let gotA = Recorder<String>()
        let subscriptions = try [a.subscribe("s") { gotA.add(text($0.data)) }, a.subscribe("service") { try? $0.respond(bytes("a")) },
                                 a.subscribe("fan.log") { gotA.add("fan " + text($0.data)) }]
        let slow = try b.subscribe("slow") { _ in }
        let inFlight = Recorder<NATSError?>()
        a.request("slow", [], timeout: .seconds(5)) { inFlight.add($0.error) }

        nodes.cluster.disconnect("a")
        nodes.runAll()
        #expect(inFlight.all == [.disconnected])
        #expect(nodes.clock.activeTimerCount == 0)

        let errors = Recorder<NATSError?>()
        #expect(throws: NATSError.notConnected) { try a.publish("s", bytes("x")) }
        a.request("slow", [], timeout: .seconds(1)) { errors.add($0.error) }
        a.append("log", "", id: "x", after: 0) { errors.add($0.error) }
        a.read(stream: "S", subject: "log", from: 1, handler: { _ in }, completion: { errors.add($0.error) })
        let bucket = a.keyValue(bucket: "leases", ttl: nil)
        bucket.create("k", [], completion: { errors.add($0.error) })
        bucket.get("k", completion: { errors.add($0.error) })
        await #expect(throws: NATSError.notConnected) { try await bucket.keys() }
        // Others go on: a's subscriptions get nothing, requests to it have no responders.
        try b.publish("s", bytes("lost"))
        b.request("service", [], timeout: .seconds(1)) { errors.add($0.error) }
        b.append("log", "stored", id: "y", after: 0) { errors.add($0.error) }
        nodes.runAll()
        #expect(errors.all == [.notConnected, .notConnected, .notConnected, .notConnected, .notConnected,
                               .noResponders(subject: "service"), nil])
        #expect(gotA.all.isEmpty)
        nodes.clock.advance(by: .seconds(10))
        nodes.runAll()
        #expect(inFlight.all.count == 1)

        nodes.cluster.reconnect("a")
        try b.publish("s", bytes("back"))
        let answers = Recorder<String>()
        b.request("service", [], timeout: .seconds(1)) { answers.add((try? $0.get()).map { text($0.data) } ?? "error") }
        a.append("log", "again", id: "z", after: 1) { errors.add($0.error) }
        nodes.runAll()
        #expect(gotA.all == ["back", "fan again"])
        #expect(answers.all == ["a"])
        #expect(errors.all.last == .some(nil))
        withExtendedLifetime((subscriptions, slow)) {}
    }
}

// MARK: Helpers

/// Nodes on one `MemoryCluster` and a `TestClock`; each node's deliveries wait in its own queue.
private final class Nodes {
    let clock = TestClock()
    let cluster: MemoryCluster
    private var queues: [(name: String, queue: NodeQueue)] = []

    init(duplicateWindow: Duration = .seconds(120), republish: @escaping @Sendable (String) -> String? = { _ in nil }) {
        cluster = MemoryCluster(clock: clock, duplicateWindow: duplicateWindow, republish: republish)
    }

    func connect(_ name: String) -> MemoryClusterConnection {
        let queue = NodeQueue()
        queues.append((name, queue))
        return cluster.connect(node: name, deliver: queue.enqueue)
    }

    func pending(_ name: String) -> Int { queue(name).count }

    /// Runs the node's queued work, and what that queues for it, until none is left.
    func run(_ name: String) { queue(name).run() }

    /// Runs every node until none has work.
    func runAll() {
        while queues.contains(where: { $0.queue.count > 0 }) {
            for (_, queue) in queues { queue.run() }
        }
    }

    private func queue(_ name: String) -> NodeQueue { queues.first { $0.name == name }!.queue }
}

private final class NodeQueue: Sendable {
    private let jobs = Mutex<[@Sendable () -> Void]>([])

    var count: Int { jobs.withLock { $0.count } }

    func enqueue(_ work: @escaping @Sendable () -> Void) { jobs.withLock { $0.append(work) } }

    func run() {
        while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { job() }
    }
}

private final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    var all: [Value] { values.withLock { $0 } }
    func add(_ value: Value) { values.withLock { $0.append(value) } }
}

extension MemoryClusterConnection {
    /// A checked append without headers, as most tests make it.
    fileprivate func append(_ subject: String, _ data: String, id: String, after last: UInt64,
                            completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        append(subject, bytes(data), headers: NATSHeaders(), messageID: id, expectedLastSubjectSequence: last, timeout: .seconds(1),
               completion: completion)
    }
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
