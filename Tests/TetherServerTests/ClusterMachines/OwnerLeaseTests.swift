import Testing
import TetherNATS
@testable import TetherServer

@Suite("Cluster state machines: the owner's lease")
struct OwnerLeaseTests {
    static let start = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }
    static func entry(_ node: String, revision: UInt64) -> NATSKeyValue.Entry {
        NATSKeyValue.Entry(key: "room", value: Array(node.utf8), revision: revision)
    }

    @Test func acquiringReadsTheLogBeforeOwningAndRenewsAfter() {
        var lease = OwnerLease(node: "a", lease: .seconds(3))
        let table: [(String, (inout OwnerLease) -> [OwnerLease.Action], [OwnerLease.Action], OwnerLease.Phase)] = [
            ("ensure", { $0.ensure() }, [.probe], .probing),
            ("nobody owns it", { $0.probed(.success(nil)) }, [.create], .creating),
            ("an action wants an owner meanwhile", { $0.acquire() }, [], .creating),
            ("created", { $0.created(.success(7), now: Self.at(0)) }, [.readLog], .catchingUp(revision: 7, since: Self.at(0))),
            ("the read fails (its stream electing)", { $0.logRead(.failure(.timeout(subject: "s")), now: Self.at(1)) },
             [.readLogAgain(after: .milliseconds(100))], .catchingUp(revision: 7, since: Self.at(0))),
            ("read to its end", { $0.logRead(.success(12), now: Self.at(1.2)) }, [.own(revision: 7), .acquired(true)], .owning(revision: 7)),
            ("renew", { $0.renewDue() }, [.renew(revision: 7)], .owning(revision: 7)),
            ("renewed", { $0.renewed(.success(9)) }, [], .owning(revision: 9)),
            ("a renewal times out", { $0.renewed(.failure(.timeout(subject: "s"))) },
             [.renewalFailed("timed out waiting for a reply on s")], .owning(revision: 9)),
            // The bucket was leaderless for longer than the lease: the key expired meanwhile.
            ("a renewal refused", { $0.renewed(.failure(.wrongRevision(key: "room", current: 12))) }, [.checkHolder], .checking(revision: 9)),
            ("no renewal while asking", { $0.renewDue() }, [], .checking(revision: 9)),
            ("the key is gone", { $0.holderChecked(.success(nil)) }, [.recreate], .checking(revision: 9)),
            ("created again", { $0.recreated(.success(14)) }, [], .owning(revision: 14)),
            ("refused again", { $0.renewed(.failure(.wrongRevision(key: "room", current: 15))) }, [.checkHolder], .checking(revision: 14)),
            ("another node holds it now", { $0.holderChecked(.success(Self.entry("b", revision: 16))) },
             [.stepDown(reason: "another node holds its lease now")], .checking(revision: 14)),
            ("step down", { $0.stepDown(release: false) }, [], .free),
        ]
        for (event, apply, actions, phase) in table {
            #expect(apply(&lease) == actions, "\(event)")
            #expect(lease.phase == phase, "\(event)")
        }
    }

    /// Issue 30's grey failure: the owners bucket lost its leader for longer than a lease (a NATS
    /// server resumed from a pause and forced elections); the owner's key expired with nobody else
    /// holding it. Stepping down then cost every forward in flight an unknown answer.
    @Test func aLeaseThatExpiredWithNobodyElseHoldingItIsKept() {
        var lease = OwnerLease(node: "a", lease: .seconds(3))
        _ = lease.acquire()
        _ = lease.created(.success(3), now: Self.at(0))
        _ = lease.logRead(.success(nil), now: Self.at(0))
        #expect(lease.renewed(.failure(.wrongRevision(key: "room", current: nil))) == [.checkHolder])
        #expect(lease.holderChecked(.success(Self.entry("a", revision: 8))) == [], "our own write after all")
        #expect(lease.phase == .owning(revision: 8))
        _ = lease.renewed(.failure(.keyExists(key: "room")))
        #expect(lease.holderChecked(.failure(.timeout(subject: "s"))) == [.renewalFailed("timed out waiting for a reply on s")])
        #expect(lease.phase == .owning(revision: 8) && lease.renewDue() == [.renew(revision: 8)], "asks again at the next renewal")
        _ = lease.renewed(.failure(.wrongRevision(key: "room", current: nil)))
        _ = lease.holderChecked(.success(nil))
        #expect(lease.recreated(.failure(.keyExists(key: "room"))) == [.checkHolder], "another node created it first: who?")
    }

    @Test func aKeyThatExistsIsTakenBackOnlyIfItIsOurs() {
        let table: [(NATSKeyValue.Entry?, [OwnerLease.Action])] = [
            (Self.entry("a", revision: 4), [.readLog]),
            (Self.entry("b", revision: 4), [.acquired(false)]),
            (nil, [.acquired(false)]),
        ]
        for (holder, expected) in table {
            var lease = OwnerLease(node: "a", lease: .seconds(3))
            #expect(lease.acquire() == [.create])
            #expect(lease.created(.failure(.keyExists(key: "room")), now: Self.at(0)) == [.readHolder])
            #expect(lease.holderRead(.success(holder), now: Self.at(0)) == expected)
        }
    }

    @Test func aLogThatCannotBeReadForALeaseGivesTheLeaseBack() {
        var lease = OwnerLease(node: "a", lease: .seconds(3))
        _ = lease.acquire()
        _ = lease.created(.success(1), now: Self.at(0))
        #expect(lease.logRead(.failure(.timeout(subject: "s")), now: Self.at(3)) == [.release, .acquired(false)])
        #expect(lease.phase == .free)
        #expect(lease.ensure() == [.probe], "free to try again")
        #expect(lease.probed(.success(Self.entry("b", revision: 2))) == [], "owned elsewhere")
        #expect(lease.phase == .free)
    }

    @Test func aRoomStoppingWhileAcquiringTellsTheWaiters() {
        var lease = OwnerLease(node: "a", lease: .seconds(3))
        _ = lease.acquire()
        #expect(lease.abandon() == [.acquired(false)])
        #expect(lease.renewDue().isEmpty && lease.renewed(.success(3)).isEmpty, "not owning: nothing to renew")
    }
}
