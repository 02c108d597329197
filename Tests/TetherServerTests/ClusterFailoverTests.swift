import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
import TetherServer
import TetherTesting

/// tetherd's cluster code (owners, logs, replicas, forwarded actions, leases, fencing) on
/// several nodes in process: a `MemoryCluster` keeps JetStream's rules, a virtual clock moves the
/// leases, and a paused node runs nothing, as under SIGSTOP. The same scenarios run on real NATS
/// in ClusterTests (end to end) and, with random faults, in Tests/Jepsen.
@Suite("Cluster in process")
struct ClusterFailoverTests {
    static func makeCluster(nodes: Int = 2) -> TestCluster {
        TestCluster(nodes: nodes, kinds: Demos.kinds + Demos.testKinds)
    }

    static func client(_ node: TestServer) -> TestClient {
        let client = node.connect()
        #expect(client.receive()?.type == "hello")
        return client
    }

    /// Two nodes, alice on the first (which comes to own the room), bob on the second, both in
    /// the room after alice's action a1 (version 1).
    static func twoNodesAfterA1() -> (TestCluster, alice: TestClient, bob: TestClient) {
        let cluster = makeCluster()
        let alice = client(cluster.nodes[0]), bob = client(cluster.nodes[1])
        alice.send(.join(room: "ledger:t"))
        bob.send(.join(room: "ledger:t"))
        add(alice, "a1", number: 1)
        #expect(alice.receiveAll().last == .ack(id: 1, room: "ledger:t", version: 1))
        _ = bob.receiveAll()
        return (cluster, alice, bob)
    }

    /// Three nodes: the first owned the room (alice's a1) and is paused; the second took it over
    /// (bob's b1, version 2); carol on the third has joined.
    static func threeNodesWithTheFirstPausedAndReplaced() -> (TestCluster, carol: TestClient) {
        let cluster = Self.makeCluster(nodes: 3)
        let alice = Self.client(cluster.nodes[0]), bob = Self.client(cluster.nodes[1]), carol = Self.client(cluster.nodes[2])
        alice.send(.join(room: "ledger:t"))
        Self.add(alice, "a1", number: 1)  // the first node owns the room
        cluster.pause(0)
        bob.send(.join(room: "ledger:t"))
        cluster.advance(by: .seconds(8))  // past the lease: the second node takes the room over
        Self.add(bob, "b1", number: 2)
        cluster.advance(by: .milliseconds(100))
        #expect(bob.receiveAll().contains(.ack(id: 2, room: "ledger:t", version: 2)))
        carol.send(.join(room: "ledger:t"))
        cluster.run()
        _ = carol.receiveAll()
        return (cluster, carol)
    }

    static func add(_ client: TestClient, _ id: String, number: Int) {
        client.send(.action(room: "ledger:t", name: "add", args: ["id": .string(id), "by": 1], id: number))
    }

    @Test func aRoomOnTwoNodesHasOneOwnerAndEveryoneConverges() {
        let cluster = Self.makeCluster()
        let alice = Self.client(cluster.nodes[0]), bob = Self.client(cluster.nodes[1])
        alice.send(.join(room: "ledger:t", id: 1))
        #expect(alice.receiveAll().map(\.type) == ["snapshot", "ack"])
        bob.send(.join(room: "ledger:t", id: 1))
        #expect(bob.receiveAll().map(\.type) == ["snapshot", "ack"])

        Self.add(alice, "a1", number: 2)
        #expect(alice.receiveAll().map(\.type) == ["patch", "ack"], "the patch reaches the sender before its ack")
        // Bob's node does not own the room: its action is forwarded to the owner.
        Self.add(bob, "b1", number: 2)
        let answers = bob.receiveAll()
        #expect(answers.map(\.type) == ["patch", "patch", "ack"])
        #expect(answers.last == .ack(id: 2, room: "ledger:t", version: 2))
        _ = alice.receiveAll()
        #expect(alice.state(of: "ledger:t")?["count"] == 2 && bob.state(of: "ledger:t")?["count"] == 2)
        #expect(alice.gaps.isEmpty && bob.gaps.isEmpty)
        #expect(cluster.logLength(of: "ledger:t") == 3,
                "the epoch's start and two version steps")
    }

    /// Issue 20's fault, in process: the owner is paused past its lease with an action of its
    /// client waiting; another node takes the room over and appends; the old owner wakes and runs
    /// the action on its stale ViewModel. Its append is fenced, and the client hears the truth:
    /// not applied. Nothing acked is lost, nothing is counted twice.
    @Test func aPausedOwnerIsFencedAndItsClientHearsNotApplied() {
        let (cluster, alice, bob) = Self.twoNodesAfterA1()

        cluster.pause(0)
        Self.add(alice, "a2", number: 2)  // waits in the paused owner's queue
        cluster.advance(by: .seconds(8))  // past the lease: the other node takes the room over
        Self.add(bob, "b1", number: 3)
        cluster.advance(by: .seconds(1))
        #expect(bob.receiveAll().compactMap { if case .ack(3, _, let version) = $0 { version } else { nil } } == [2],
                "the new owner applied bob's action after a1")

        cluster.resume(0)
        cluster.advance(by: .seconds(1))
        let errors = alice.receiveAll().compactMap(\.error)
        #expect(errors.map(\.id) == [2])
        #expect(errors.first?.applied == .no, "the stale owner's append was fenced: a2 was not applied")
        _ = bob.receiveAll()
        #expect(alice.state(of: "ledger:t") == bob.state(of: "ledger:t"))
        #expect(bob.state(of: "ledger:t")?["recent"] == ["a1", "b1"])

        // Sent again, it is applied once, by the new owner.
        Self.add(alice, "a2", number: 4)
        cluster.advance(by: .milliseconds(100))
        #expect(alice.receiveAll().compactMap { if case .ack(4, _, let version) = $0 { version } else { nil } } == [3])
        #expect(alice.state(of: "ledger:t")?["recent"] == ["a1", "b1", "a2"])
    }

    /// Bounded answers: the owner is cut off from NATS while its client acts. Its append keeps
    /// failing (it would retry for 10 s before stepping down); its client hears within a lease
    /// that the outcome is unknown. Bob's action on the other node finds no owner it can reach:
    /// his node takes the room once the lease ends, and he has his ack within the same bound.
    @Test func anOwnerCutOffFromItsLogAnswersWithinALease() {
        let (cluster, alice, bob) = Self.twoNodesAfterA1()
        cluster.disconnect(0)
        Self.add(alice, "a2", number: 2)
        Self.add(bob, "b1", number: 2)
        cluster.advance(by: .milliseconds(2_900))
        #expect(alice.receiveAll().compactMap(\.error).isEmpty, "not before the limit")
        cluster.advance(by: .milliseconds(200))
        let errors = alice.receiveAll().compactMap(\.error)
        #expect(errors.map(\.id) == [2] && errors.first?.applied == .unknown, "\(errors)")
        #expect(bob.receiveAll().contains(.ack(id: 2, room: "ledger:t", version: 2)), "the new owner applied b1")
    }

    /// Bounded answers count from the action's arrival, not from when its node took the room:
    /// the owner is cut off and the log takes no appends (its stream leader's server killed).
    /// Bob's action finds no owner; his node waits out the lease, takes the room, and its append
    /// stalls. He hears "unknown" within a lease of sending, not a lease after the takeover.
    /// Sent again under its number once the log is back, it is applied once.
    @Test func anActionThatWaitedForATakeoverIsAnsweredWithinALeaseOfItsSending() {
        let cluster = Self.makeCluster()
        let alice = Self.client(cluster.nodes[0]), bob = Self.client(cluster.nodes[1])
        bob.send(.hello(client: "bob-device-0123456789"))
        for client in [alice, bob] { client.send(.join(room: "ledger:t")) }
        Self.add(alice, "a1", number: 1)  // the first node owns the room
        _ = bob.receiveAll()
        cluster.disconnect(0)
        cluster.transport.refuseAppends(true)
        cluster.advance(by: .milliseconds(500))
        let b1: ClientMessage = .action(room: "ledger:t", name: "add", args: ["id": "b1", "by": 1], id: 2, seq: 1)
        bob.send(b1)
        cluster.advance(by: .milliseconds(2_900))
        #expect(bob.receiveAll().compactMap(\.error).isEmpty, "not before the limit")
        cluster.advance(by: .milliseconds(200))
        let errors = bob.receiveAll().compactMap(\.error)
        #expect(errors.map(\.id) == [2] && errors.first?.applied == .unknown, "answered within a lease of sending: \(errors)")

        cluster.transport.refuseAppends(false)
        cluster.advance(by: .milliseconds(500))
        bob.send(b1)
        cluster.advance(by: .milliseconds(500))
        #expect(bob.receiveAll().contains(.ack(id: 2, room: "ledger:t", version: 2)))
        #expect(bob.state(of: "ledger:t")?["recent"] == ["a1", "b1"], "applied once")
    }

    /// Issue 30's grey failure: the old owner is paused, still subscribed where forwards arrive.
    /// The new owner announced itself, so carol's node forwards to it by name: none of her
    /// actions waits on the paused node (with the owners' queue group alone, every other one
    /// went there and was answered unknown after a lease).
    @Test func forwardsGoToTheNewOwnerByNameNotToAPausedOne() {
        let (cluster, carol) = Self.threeNodesWithTheFirstPausedAndReplaced()
        for (index, id) in ["c1", "c2", "c3", "c4"].enumerated() { Self.add(carol, id, number: 10 + index) }
        cluster.advance(by: .milliseconds(500))
        let acks = carol.receiveAll().compactMap { if case .ack(let id, _, _) = $0 { id } else { nil } }
        #expect(acks == [10, 11, 12, 13], "every forward reached the new owner at once")
    }

    /// Found by the fault-injection test in CI: a forwarded action reached both the new owner and
    /// a stale owner that woke up, learned from the log it no longer owns, and answered first
    /// "changing owners; nothing was applied", while the new owner applied it. The owners' queue
    /// group gives each forwarded action to one of them only, so whatever answers is the truth.
    @Test func aForwardedActionGetsATruthfulAnswerWhileOwnersChange() {
        let (cluster, carol) = Self.threeNodesWithTheFirstPausedAndReplaced()

        // Carol's actions are forwarded while both owners sleep; the stale one wakes first.
        cluster.pause(1)
        for (index, id) in ["c1", "c2", "c3", "c4"].enumerated() { Self.add(carol, id, number: 10 + index) }
        cluster.resume(0)
        cluster.resume(1)
        cluster.advance(by: .seconds(5))
        let answers = carol.receiveAll().filter { $0.type == "ack" || $0.type == "error" }
        let recent = carol.state(of: "ledger:t")?["recent"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(answers.count == 4, "\(answers)")
        for (index, id) in ["c1", "c2", "c3", "c4"].enumerated() {
            let answer = answers.first { message in
                if case .ack(10 + index, _, _) = message { return true }
                return message.error?.id == 10 + index
            }
            if let error = answer?.error, error.applied == .no {
                #expect(!recent.contains(id), "\(id) was answered \"not applied\" (\(error.message)) but is in the ledger: \(recent)")
            } else if answer?.type == "ack" {
                #expect(recent.filter { $0 == id }.count == 1, "\(id) was acked: applied exactly once in \(recent)")
            }
        }
    }

    /// The log itself fences: the stale owner is also cut off while another node takes over, so
    /// it never hears of the new owner's entry, and it appends its client's action on top of the
    /// version it knows. The checked append (expected last sequence, and a message id per slot)
    /// refuses it; the owner reads the log, finds another owner's entry in that place, and steps
    /// down; its client hears "not applied". Without either check the log would fork.
    @Test func aStaleOwnersAppendIsRefusedByTheLog() {
        let (cluster, alice, bob) = Self.twoNodesAfterA1()

        cluster.pause(0)
        cluster.disconnect(0)  // the new owner's entry never reaches it
        cluster.advance(by: .seconds(8))
        Self.add(bob, "b1", number: 2)
        cluster.advance(by: .seconds(1))
        #expect(bob.receiveAll().compactMap { if case .ack(2, _, let version) = $0 { version } else { nil } } == [2])

        cluster.resume(0)
        Self.add(alice, "a2", number: 3)  // runs on the stale owner; its append fails while cut off
        cluster.advance(by: .milliseconds(100))
        cluster.reconnect(0)              // the retried append meets the new owner's entry
        for _ in 0..<20 { cluster.advance(by: .milliseconds(100)) }
        let errors = alice.receiveAll().compactMap(\.error)
        #expect(errors.map(\.id) == [3])
        #expect(errors.first?.applied == .no, "the log refused the stale owner's append: a2 was not applied")
        let log = cluster.logLength(of: "ledger:t")
        #expect(log == 3, "the epoch's start, a1 and b1: nothing of the stale owner's")
        _ = bob.receiveAll()
        #expect(alice.state(of: "ledger:t") == bob.state(of: "ledger:t"))
        #expect(bob.state(of: "ledger:t")?["recent"] == ["a1", "b1"])
    }

    /// No ack before the step is in the log: an owner cut off from the log applies its client's
    /// action but neither the patch nor the ack leaves until the append (retried) is stored.
    @Test func anActionIsAckedOnlyOnceItsStepIsInTheLog() {
        let cluster = Self.makeCluster()
        let alice = Self.client(cluster.nodes[0])
        alice.send(.join(room: "ledger:t"))
        _ = alice.receiveAll()

        cluster.disconnect(0)
        Self.add(alice, "a1", number: 1)
        cluster.advance(by: .seconds(1))
        #expect(alice.receiveAll().isEmpty, "nothing before the log holds the step")
        #expect(cluster.logLength(of: "ledger:t") == 1, "only the epoch's start")

        cluster.reconnect(0)
        cluster.advance(by: .milliseconds(500))
        let messages = alice.receiveAll()
        #expect(messages.map(\.type) == ["patch", "ack"])
        #expect(messages.last == .ack(id: 1, room: "ledger:t", version: 1))
        #expect(cluster.logLength(of: "ledger:t") == 2)
    }

    /// The owner dies (stopped and cut off): its lease runs out, the next action's node takes the
    /// room over, reads the log and continues the same epoch with every acked action.
    @Test func aDeadOwnersRoomFailsOverWithItsEpochAndItsAckedActions() {
        let cluster = Self.makeCluster(nodes: 3)
        let alice = Self.client(cluster.nodes[0]), bob = Self.client(cluster.nodes[1]), carol = Self.client(cluster.nodes[2])
        for client in [alice, bob, carol] { client.send(.join(room: "ledger:t")) }
        Self.add(alice, "a1", number: 1)
        Self.add(carol, "c1", number: 1)
        _ = alice.receiveAll(); _ = carol.receiveAll(); _ = bob.receiveAll()
        let epoch = bob.mirrors["ledger:t"]?.epoch

        cluster.pause(0)
        cluster.disconnect(0)
        Self.add(bob, "b1", number: 2)
        cluster.advance(by: .seconds(5))
        #expect(bob.receiveAll().compactMap { if case .ack(2, _, let version) = $0 { version } else { nil } } == [3])
        _ = carol.receiveAll()
        #expect(bob.mirrors["ledger:t"]?.epoch == epoch, "failover keeps the epoch")
        #expect(bob.state(of: "ledger:t")?["recent"] == ["a1", "c1", "b1"])
        #expect(carol.state(of: "ledger:t") == bob.state(of: "ledger:t"))
    }

    /// `tether rooms` on a cluster showed SIZE and LAST CHANGE as "-" for rooms in memory, on the
    /// owner and on a replica alike (a single node shows them).
    @Test func theRoomListGivesSizeAndLastChangeOfRoomsInMemory() {
        let (cluster, alice, _) = Self.twoNodesAfterA1()
        cluster.advance(by: .seconds(3))
        Self.add(alice, "a2", number: 2)
        cluster.advance(by: .milliseconds(100))
        #expect(alice.receiveAll().contains(.ack(id: 2, room: "ledger:t", version: 2)))
        for node in cluster.nodes {
            let entry = node.roomList().first { $0.name == "ledger:t" }
            #expect(entry?.inMemory == true && entry?.version == 2)
            #expect((entry?.bytes ?? 0) > 10, "the state's size: \(String(describing: entry))")
            #expect(entry?.lastChange == cluster.clock.secondsSince1970, "the last change: \(String(describing: entry))")
        }
    }
}
