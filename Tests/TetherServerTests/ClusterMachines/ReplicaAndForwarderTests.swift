import Testing
import TetherNATS
import TetherProtocol
import TetherState
@testable import TetherServer

@Suite("Cluster state machines: the replica and the forwarder")
struct ReplicaAndForwarderTests {
    static func message(_ sequence: UInt64, after previous: UInt64) -> NATSMessage {
        NATSMessage(subject: "tether.fan.0.r", headers: ["Nats-Sequence": String(sequence), "Nats-Last-Sequence": String(previous)], data: [])
    }

    static func describe(_ actions: [LogReplica.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .loadSnapshot(let delay): "load snapshot in \(delay)"
            case .catchUp(let delay): "catch up in \(delay)"
            case .apply(_, let sequence): "apply \(sequence)"
            case .replay(let messages): "replay \(messages.compactMap { $0.headers["Nats-Sequence"] }.joined(separator: ","))"
            case .becameReady: "ready"
            case .verify(let delay): "verify in \(delay)"
            }
        }
    }

    /// Loading, messages during the read, a gap, a failed read: the replica applies each message
    /// once, in order, and reads again from the last one applied.
    @Test func theReplicaAppliesEveryMessageOnceInOrderAcrossReadsAndGaps() {
        var replica = LogReplica()
        let table: [(String, (inout LogReplica) -> [LogReplica.Action], [String])] = [
            ("start", { $0.start() }, ["load snapshot in 0.0 seconds"]),
            ("a snapshot at 10", { $0.restored(at: 10) }, ["catch up in 0.0 seconds"]),
            ("12 arrives during the read", { $0.live(Self.message(12, after: 11)) }, []),
            ("the read fails", { $0.caughtUp(.failure(.timeout(subject: "s")), generation: 0) }, ["catch up in 0.5 seconds"]),
            ("the read applied 11", { r in r.applied(11); return r.caughtUp(.success(11), generation: 0) }, ["replay 12"]),
            ("replayed", { $0.live(Self.message(12, after: 11)) }, ["apply 12"]),
            ("done loading", { r in r.applied(12); return r.finishLoading() }, ["ready", "verify in 1.0 seconds"]),
            ("an old message", { $0.live(Self.message(12, after: 11)) }, []),
            ("a gap: 15 after 14", { $0.live(Self.message(15, after: 14)) }, ["catch up in 0.0 seconds"]),
            ("read 13 and 14", { r in r.applied(14); return r.caughtUp(.success(14), generation: 0) }, ["replay 15"]),
            ("15 continues", { $0.live(Self.message(15, after: 14)) }, ["apply 15"]),
            ("ready already", { $0.finishLoading() }, []),
            // The read a second after the first ready: a message republished before this
            // node's interest reached the log's server is read, not waited for.
            ("verify", { $0.verify() }, ["catch up in 0.0 seconds"]),
            ("verify during a read", { $0.verify() }, []),
            ("nothing new", { r in r.applied(15); return r.caughtUp(.success(nil), generation: 0) }, []),
            ("16 arrives", { $0.live(Self.message(16, after: 15)) }, ["apply 16"]),
        ]
        for (event, apply, expected) in table {
            #expect(Self.describe(apply(&replica)) == expected, "\(event)")
        }
        #expect(replica.phase == .ready)
    }

    @Test func aReloadStartsOverFromTheSnapshotAndAStoppedReplicaIgnoresTheLog() {
        var replica = LogReplica()
        _ = replica.start()
        _ = replica.restored(at: nil)
        replica.applied(5)
        #expect(Self.describe(replica.reload(now: Self.start)) == ["load snapshot in 0.0 seconds"])
        #expect(replica.lastSequence == 0 && replica.isNew(1))
        replica.stop()
        #expect(replica.live(Self.message(1, after: 0)).isEmpty)
        #expect(replica.caughtUp(.success(nil), generation: replica.generation).isEmpty)
    }

    static let start = ContinuousClock.now

    /// The history of the soak's reload storm: a snapshot older than the oldest entry the log
    /// keeps. Each message of the read disagreed and started the replica over (30,000 times a
    /// second), and the stale read's end marked the new one caught up.
    @Test func aReplicaStartsOverOncePerDisagreementAndBacksOffWhenItRepeats() {
        var replica = LogReplica()
        _ = replica.start()
        _ = replica.restored(at: 100)
        let firstRead = replica.generation
        // The read's first message does not continue the snapshot: start over, at once.
        #expect(Self.describe(replica.reload(now: Self.start)) == ["load snapshot in 0.0 seconds"])
        #expect(replica.generation == firstRead + 1, "the first read is stale now")
        #expect(replica.phase == .loading, "nobody takes the room over from a replica that holds nothing yet")
        // The stale read ends: it changes nothing (the new one is still to catch up).
        #expect(replica.caughtUp(.success(2_100), generation: firstRead).isEmpty)
        #expect(replica.isCatchingUp)
        // The same snapshot, the same disagreement, within a second: after a pause.
        _ = replica.restored(at: 100)
        #expect(Self.describe(replica.reload(now: Self.start + .milliseconds(300))) == ["load snapshot in 0.5 seconds"])
        // Later than a second after the last one: at once again.
        _ = replica.restored(at: 2_200)
        #expect(Self.describe(replica.reload(now: Self.start + .seconds(5))) == ["load snapshot in 0.0 seconds"])
        // The current read's end counts.
        _ = replica.restored(at: 2_300)
        _ = replica.caughtUp(.success(2_400), generation: replica.generation)
        #expect(!replica.isCatchingUp && replica.phase == .ready)
    }

    typealias Forwarder = ActionForwarder<String>

    static func request(_ target: String) -> Forwarder.Request {
        Forwarder.Request(action: "add", args: nil, number: nil, target: target, sent: .now)
    }

    static func describe(_ next: Forwarder.Next?) -> String {
        switch next {
        case nil: "nothing"
        case .answer(.applied(let version), let target, _)?: "\(target): ack v\(version)"
        case .answer(.failed(let error), let target, _)?: "\(target): \(error.code.rawValue) (\(error.applied.rawValue))"
        case .ownOrRetry(let request)?: "\(request.target): own or retry (attempt \(request.attempt))"
        }
    }

    /// The stale owner's history, the forwarder's half: a forward held by an owner that was
    /// replaced is answered once, as unknown, when the new owner announces itself; the stale
    /// owner's late "nothing was applied" is not taken as the truth about it. (That both owners
    /// never receive one forward is the owners' queue group: ClusterFailoverTests.)
    @Test func aForwardGetsOneAnswerTheFirst() {
        var forwarder = Forwarder(room: "r", lease: .seconds(3))
        let alice = forwarder.forward(Self.request("alice"))
        let bob = forwarder.forward(Self.request("bob"))
        let reply = NATSMessage(subject: "_INBOX.1", data: ForwardedAction.reply(.applied(version: 9)))
        #expect(Self.describe(forwarder.finished(alice, .success(reply))) == "alice: ack v9")
        #expect(Self.describe(forwarder.finished(alice, .success(reply))) == "nothing", "answered once")
        #expect(forwarder.stuck == [bob])
        let unknown = forwarder.giveUp(forwarder.stuck)
        #expect(unknown.map { Self.describe($0) } == ["bob: unavailable (unknown)"])
        let stale = NATSMessage(subject: "_INBOX.2", data: ForwardedAction.reply(.failed(ClusteredRoom.notApplied("changing owners"))))
        #expect(Self.describe(forwarder.finished(bob, .success(stale))) == "nothing", "the stale owner's late answer is not the truth")
    }

    @Test func aForwardThatFindsNoOwnerTakesTheRoomOrWaitsALeaseForIt() {
        var forwarder = Forwarder(room: "r", lease: .seconds(3))
        var request = Self.request("alice")
        for attempt in 1...24 {
            let number = forwarder.forward(request)
            guard case .ownOrRetry(let next)? = forwarder.finished(number, .failure(.noResponders(subject: "s"))) else {
                Issue.record("attempt \(attempt) was answered")
                return
            }
            #expect(next.attempt == attempt)
            request = next
        }
        let number = forwarder.forward(request)
        #expect(Self.describe(forwarder.finished(number, .failure(.noResponders(subject: "s")))) == "alice: unavailable (no)",
                "after a lease and 3 s: nobody can own it")
        let timedOut = forwarder.forward(Self.request("bob"))
        #expect(Self.describe(forwarder.finished(timedOut, .failure(.timeout(subject: "s")))) == "bob: unavailable (unknown)")
    }
}
