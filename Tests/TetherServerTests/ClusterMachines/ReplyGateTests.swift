import Testing
import TetherProtocol
import TetherState
@testable import TetherServer

/// The reply gate's one rule, by tables: a reply leaves when the entry carrying its action is
/// stored and this node's replica applied it. Targets are names; "remote" ones are another node's.
@Suite("Cluster state machines: the reply gate")
struct ReplyGateTests {
    typealias Gate = ReplyGate<String>

    static let notStored = ActionOutcome.failed(ProtocolError(.unavailable, "not stored", applied: .no))
    static let unknown = ActionOutcome.failed(ProtocolError(.unavailable, "unknown", applied: .unknown))
    static let failed = ActionOutcome.failed(ProtocolError(.invalidArgs, "bad"))

    static let t0 = ContinuousClock.now

    static func at(_ sequence: UInt64, _ version: Int) -> ReplicaPosition {
        ReplicaPosition(sequence: sequence, version: version, hasEpoch: true)
    }

    static func describe(_ releases: [Gate.Release]) -> [String] {
        releases.map { release in
            switch release.outcome {
            case .applied(let version): "\(release.target): ack v\(version)"
            case .failed(let error): "\(release.target): \(error.message) (\(error.applied.rawValue))"
            }
        }
    }

    /// The owner's stored position: entry 10 brought version 4.
    static let stored: (version: Int, sequence: UInt64) = (4, 10)

    @Test func anOwnersAckLeavesWhenItsEntryIsStoredAndTheReplicaAppliedIt() {
        var gate = Gate()
        let table: [(String, (inout Gate) -> [Gate.Release], [String])] = [
            ("ack of v5 (not stored yet)", { $0.ownerReplied(.applied(version: 5), to: "alice", isLocal: true, version: 5, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3)) }, []),
            ("ack of v5 to another node", { $0.ownerReplied(.applied(version: 5), to: "remote", isLocal: false, version: 5, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3)) }, []),
            ("an error after v5", { $0.ownerReplied(Self.failed, to: "bob", isLocal: true, version: 5, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3)) }, []),
            ("v5 stored at 11", { $0.stored(upTo: 5, at: 11, replica: Self.at(10, 4)) }, ["remote: ack v5"]),
            ("the replica applies 11", { $0.replicaMoved(Self.at(11, 5)) }, ["alice: ack v5", "bob: bad (no)"]),
        ]
        for (event, apply, expected) in table {
            #expect(Self.describe(apply(&gate)) == expected, "\(event)")
        }
        #expect(gate.waiting.isEmpty)
    }

    @Test func aRepeatsAckForAStoredVersionWaitsOnlyForTheReplica() {
        var gate = Gate()
        #expect(Self.describe(gate.ownerReplied(.applied(version: 3), to: "alice", isLocal: true, version: 3, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3))) == ["alice: ack v3"])
        #expect(gate.ownerReplied(.applied(version: 4), to: "bob", isLocal: true, version: 4, stored: Self.stored,
                              replica: Self.at(9, 3), deadline: Self.t0 + .seconds(3)).isEmpty, "the replica is behind the owner's entry")
        #expect(Self.describe(gate.replicaMoved(Self.at(10, 4))) == ["bob: ack v4"])
    }

    /// Soak history (2026-11-28): a reply released after the term ended (the step-down came
    /// between the step and its reply, or a repeat answered from the record) was answered "not
    /// stored" although its version was in the log. Red with that rule put back.
    @Test func aReplyReleasedAfterTheTermEndedFollowsItsStepsFate() {
        let table: [(String, ActionOutcome, StepFate, [String], waits: Bool)] = [
            ("an ack of a stored step", .applied(version: 3), .stored(sequence: 10), ["alice: ack v3"], false),
            ("an ack of a stored step the replica has not applied", .applied(version: 4), .stored(sequence: 11), [], true),
            ("an ack in the undecided append", .applied(version: 5), .undecided, [], true),
            ("an ack in an append not decided in time", .applied(version: 5), .unknown, ["alice: unknown (unknown)"], false),
            ("an ack of a step never appended", .applied(version: 6), .notStored, ["alice: not stored (no)"], false),
            ("an error", Self.failed, .stored(sequence: 11), ["alice: bad (no)"], false),
        ]
        for (event, outcome, fate, expected, waits) in table {
            var gate = Gate()
            #expect(Self.describe(gate.ownerRepliedLate(outcome, to: "alice", isLocal: true, fate: fate, notStored: Self.notStored,
                                                        unknown: Self.unknown, replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3))) == expected, "\(event)")
            #expect(gate.waiting.isEmpty != waits, "\(event)")
        }
        var gate = Gate()
        _ = gate.ownerRepliedLate(.applied(version: 5), to: "alice", isLocal: true, fate: .undecided, notStored: Self.notStored,
                                  unknown: Self.unknown, replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3))
        #expect(Self.describe(gate.decided(stored: true, at: 11, notStored: Self.notStored, replica: Self.at(11, 5))) == ["alice: ack v5"])
    }

    /// Issue 20's history, the gate's half: the paused owner's held ack must not leave when
    /// another owner's entry fences it, even though the log reached the version the ack names.
    /// Red with the old rule (an ack leaves once the replica reaches its version) put back.
    @Test func thePausedOwnersHeldAckBecomesNotAppliedWhenFenced() {
        var gate = Gate()
        _ = gate.ownerReplied(.applied(version: 5), to: "alice", isLocal: true, version: 5, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3))
        #expect(gate.replicaMoved(Self.at(11, 5)).isEmpty, "the log reached v5 with another owner's entry: no ack from that")
        #expect(Self.describe(gate.ownerSteppedDown(inFlightVersion: 5, fenced: true, notStored: Self.notStored)) == ["alice: not stored (no)"])
        #expect(gate.waiting.isEmpty)
    }

    @Test func anUndecidedAppendsAcksWaitForTheLog() {
        let table: [(String, (inout Gate) -> [Gate.Release], [String])] = [
            ("decided: stored at 11", { $0.decided(stored: true, at: 11, notStored: Self.notStored, replica: Self.at(11, 5)) },
             ["alice: ack v5"]),
            ("decided: another owner's entry", { $0.decided(stored: false, at: 11, notStored: Self.notStored, replica: Self.at(11, 5)) },
             ["alice: not stored (no)"]),
            ("expired", { $0.undecidedExpired(Self.unknown) }, ["alice: unknown (unknown)"]),
        ]
        for (event, apply, expected) in table {
            var gate = Gate()
            _ = gate.ownerReplied(.applied(version: 5), to: "alice", isLocal: true, version: 5, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3))
            _ = gate.ownerReplied(.applied(version: 6), to: "bob", isLocal: true, version: 6, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3))
            _ = gate.ownerReplied(Self.failed, to: "carol", isLocal: true, version: 6, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3))
            // v5 is in flight; v6 was only queued.
            #expect(Self.describe(gate.ownerSteppedDown(inFlightVersion: 5, fenced: false, notStored: Self.notStored))
                    == ["bob: not stored (no)", "carol: bad (no)"])
            #expect(gate.hasUndecided)
            #expect(Self.describe(apply(&gate)) == expected, "\(event)")
            #expect(gate.waiting.isEmpty)
        }
    }

    @Test func aForwardedActionsAnswerWaitsForTheReplicaToReachItsVersion() {
        var gate = Gate()
        #expect(gate.ownerAnswered(.applied(version: 7), to: "alice", replica: Self.at(10, 6), deadline: Self.t0 + .seconds(3)).isEmpty)
        #expect(Self.describe(gate.ownerAnswered(Self.notStored, to: "bob", replica: Self.at(10, 6), deadline: Self.t0 + .seconds(3))) == ["bob: not stored (no)"])
        #expect(gate.ownerAnswered(Self.notStored, to: "carol", replica: ReplicaPosition(sequence: 0, version: 0, hasEpoch: false), deadline: Self.t0 + .seconds(3)).isEmpty,
                "no epoch yet: nothing to be behind of")
        #expect(Self.describe(gate.replicaMoved(Self.at(11, 7))) == ["alice: ack v7", "carol: not stored (no)"])
    }

    /// Bounded answers: whatever a reply waits for, past the limit it leaves as unknown.
    @Test func aReplyThatWaitedTheLimitLeavesAsUnknown() {
        var gate = Gate()
        _ = gate.ownerReplied(.applied(version: 5), to: "alice", isLocal: true, version: 5, stored: Self.stored,
                              replica: Self.at(10, 4), deadline: Self.t0 + .seconds(3))
        _ = gate.ownerAnswered(.applied(version: 9), to: "bob", replica: Self.at(10, 4), deadline: Self.t0 + .seconds(4))
        #expect(gate.nextDeadline == Self.t0 + .seconds(3))
        #expect(gate.overdue(now: Self.t0 + .milliseconds(2_999), unknown: Self.unknown).isEmpty)
        #expect(Self.describe(gate.overdue(now: Self.t0 + .seconds(3), unknown: Self.unknown)) == ["alice: unknown (unknown)"])
        #expect(Self.describe(gate.overdue(now: Self.t0 + .seconds(4), unknown: Self.unknown)) == ["bob: unknown (unknown)"])
        #expect(gate.waiting.isEmpty && gate.stored(upTo: 9, at: 20, replica: Self.at(20, 9)).isEmpty, "answered once")
    }
}
