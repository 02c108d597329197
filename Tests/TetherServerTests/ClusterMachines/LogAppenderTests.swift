import Testing
import TetherJSON
import TetherNATS
import TetherState
@testable import TetherServer

/// The owner's appender driven through event tables: each row an event and the actions it must
/// give, in order (`describe` writes them as short strings).
@Suite("Cluster state machines: the owner's appender")
struct LogAppenderTests {
    static let start = ContinuousClock.now

    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    static func step(_ version: Int, stored: [PatchOperation] = [], applied: ActionNumber? = nil) -> LogAppender.Step {
        .patch(PatchFrame(room: "r", epoch: "E", from: version - 1, version: version, operations: [.replace(path: "/n", value: .int(version))]),
               stored: stored, projections: nil, applied: applied)
    }

    /// Another owner's entry for the slot after `from` (a different term).
    static func foreignEntry(from: Int, to version: Int) -> LogEntry {
        LogEntry(kind: .patch, epoch: "E", from: from, version: version, node: "other", term: "T2", frame: [])
    }

    static func describe(_ actions: [LogAppender.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .append(let entry, let expected): "append \(entry.from)->\(entry.version) after \(expected)"
            case .retry(let entry, let delay): "retry \(entry.from)->\(entry.version) in \(delay)"
            case .readToDecide(let entry, _, let delay): "read to decide \(entry.from)->\(entry.version) in \(delay)"
            case .stored(let version, let sequence, _): "stored v\(version) at \(sequence)"
            case .stepDown(let reason, let release, let fenced): "step down\(fenced ? " fenced" : "")\(release ? " releasing" : ""): \(reason)"
            case .decided(let stored, let sequence): "decided \(stored ? "stored" : "not stored") at \(sequence)"
            }
        }
    }

    /// An owner of term T1 on node a, continuing the log's entry 10 (version 4).
    static func owner() -> LogAppender {
        var appender = LogAppender(node: "a")
        appender.own(term: "T1", after: 10, version: 4)
        return appender
    }

    @Test func stepsQueueBehindTheAppendInFlightAndGoTogether() {
        var appender = Self.owner()
        let first = appender.produced(Self.step(5), term: "T1", now: Self.at(0))
        #expect(Self.describe(first) == ["append 4->5 after 10"])
        #expect(appender.produced(Self.step(6), term: "T1", now: Self.at(0)).isEmpty, "one append in flight")
        #expect(appender.produced(Self.step(7), term: "T1", now: Self.at(0)).isEmpty)
        guard case .append(let entry, _) = first[0] else { return }
        let stored = appender.appendFinished(.success(11), entry: entry, now: Self.at(0.001))
        #expect(Self.describe(stored) == ["stored v5 at 11", "append 5->7 after 11"], "the two queued steps go in one message")
        #expect(appender.producedVersion == 7)
    }

    /// A checkpoint is an entry of its own between the patches around it, at the version they
    /// reached, with a message id of its own (the patch after it starts at the same version).
    @Test func aCheckpointGoesAloneBetweenThePatchesAroundIt() {
        var appender = Self.owner()
        guard case .append(let first, _)? = appender.produced(Self.step(5), term: "T1", now: Self.at(0)).first else { return }
        _ = appender.produced(.checkpoint(epoch: "E", version: 5, frame: [1], stored: ["s": 1]), term: "T1", now: Self.at(0))
        _ = appender.produced(Self.step(6), term: "T1", now: Self.at(0))
        let afterPatch = appender.appendFinished(.success(11), entry: first, now: Self.at(0.001))
        #expect(Self.describe(afterPatch) == ["stored v5 at 11", "append 5->5 after 11"])
        guard case .append(let checkpoint, _)? = afterPatch.last else { return }
        #expect(checkpoint.kind == .checkpoint && checkpoint.stored == ["s": 1] && checkpoint.frame == [1])
        let afterCheckpoint = appender.appendFinished(.success(12), entry: checkpoint, now: Self.at(0.002))
        #expect(Self.describe(afterCheckpoint) == ["stored v5 at 12", "append 5->6 after 12"])
        guard case .append(let next, _)? = afterCheckpoint.last else { return }
        #expect(Set([first, checkpoint, next].map { $0.messageID(room: "r") }) == ["r/E/4", "r/E/checkpoint-5", "r/E/5"])
    }

    @Test func aTermThatEndedAppendsNothing() {
        var appender = Self.owner()
        #expect(appender.produced(Self.step(5), term: "T0", now: Self.at(0)).isEmpty)
        _ = appender.stepDown(fenced: false, now: Self.at(0))
        #expect(appender.produced(Self.step(5), term: "T1", now: Self.at(0)).isEmpty)
    }

    @Test func aFailedAppendIsRetriedThenTheOwnerGivesUp() {
        var appender = Self.owner()
        guard case .append(let entry, _) = appender.produced(Self.step(5), term: "T1", now: Self.at(0))[0] else { return }
        let table: [(Double, Result<UInt64, NATSError>, [String])] = [
            (2, .failure(.timeout(subject: "s")), ["retry 4->5 in 0.25 seconds"]),
            (9.9, .failure(.timeout(subject: "s")), ["retry 4->5 in 0.25 seconds"]),
            (10, .failure(.timeout(subject: "s")), ["step down releasing: its log did not take a version for 10.0 seconds (timed out waiting for a reply on s)"]),
        ]
        for (seconds, result, expected) in table {
            #expect(Self.describe(appender.appendFinished(result, entry: entry, now: Self.at(seconds))) == expected, "at \(seconds) s")
        }
        #expect(Self.describe(appender.resend(entry)) == ["append 4->5 after 10"])
    }

    /// Issue 20's history: the owner is paused with an append in flight past its lease; another
    /// node takes the room and appends in that slot; the owner wakes, its append is refused, and
    /// the log shows another owner's entry there. The owner is fenced and acks nothing: its reply
    /// gate turns the held ack into "not applied" (ReplyGateTests). Red with the old bug put back
    /// (an append taken as stored because the log reached its version).
    @Test func thePausedOwnersAppendIsFencedByAnotherOwnersEntry() {
        var appender = Self.owner()
        guard case .append(let entry, _) = appender.produced(Self.step(5), term: "T1", now: Self.at(0))[0] else { return }
        let refused = appender.appendFinished(.failure(.wrongLastSequence(current: 11)), entry: entry, now: Self.at(8))
        #expect(Self.describe(refused) == ["read to decide 4->5 in 0.0 seconds"])
        let holds = appender.logHolds(Self.foreignEntry(from: 4, to: 5), at: 11, now: Self.at(8.01))
        #expect(Self.describe(holds) == ["step down fenced: another node appended to its log (fenced)"],
                "another owner's entry in our slot, with our version, is not our append")
        #expect(appender.stepDown(fenced: true, now: Self.at(8.01)) == 5)
        #expect(appender.undecided == nil, "a fenced append is decided: refused")
    }

    /// Whatever holds the place after the last stored entry, stored or still being stored
    /// (nats-server 2.10 on answers a message id in process with error 10158), the log decides.
    @Test func aRefusedAppendIsDecidedByReadingTheLog() {
        let refusals: [NATSError] = [.duplicate(sequence: 11), .duplicateInProcess, .wrongLastSequence(current: 11)]
        for refusal in refusals {
            var appender = Self.owner()
            guard case .append(let entry, _) = appender.produced(Self.step(5), term: "T1", now: Self.at(0))[0] else { return }
            #expect(Self.describe(appender.appendFinished(.failure(refusal), entry: entry, now: Self.at(1)))
                    == ["read to decide 4->5 in 0.0 seconds"], "\(refusal)")
        }
    }

    @Test func theOwnersOwnEntryMetInTheLogConfirmsItsAppend() {
        var appender = Self.owner()
        guard case .append(let entry, _) = appender.produced(Self.step(5), term: "T1", now: Self.at(0))[0] else { return }
        _ = appender.appendFinished(.failure(.duplicate(sequence: 11)), entry: entry, now: Self.at(1))
        #expect(Self.describe(appender.logHolds(entry, at: 11, now: Self.at(1))) == ["stored v5 at 11"])
        #expect(appender.readToDecideFinished(entry, since: Self.at(1), now: Self.at(1.1)).isEmpty, "decided already")
        #expect(appender.appendFinished(.success(11), entry: entry, now: Self.at(1.2)).isEmpty, "a late ack of the same append changes nothing")
    }

    @Test func anAppendInFlightAtAStepDownIsDecidedByTheLogOrExpires() {
        let table: [(String, LogEntry?, [String], Bool)] = [
            ("our entry", nil, ["decided stored at 11"], false),
            ("another owner's", Self.foreignEntry(from: 4, to: 5), ["decided not stored at 11"], false),
        ]
        for (name, foreign, expected, _) in table {
            var appender = Self.owner()
            guard case .append(let entry, _) = appender.produced(Self.step(5), term: "T1", now: Self.at(0))[0] else { return }
            #expect(appender.stepDown(fenced: false, now: Self.at(1)) == 5)
            #expect(appender.undecided?.after == 10)
            #expect(Self.describe(appender.logHolds(foreign ?? entry, at: 11, now: Self.at(2))) == expected, "\(name)")
            #expect(appender.undecided == nil)
        }
        var appender = Self.owner()
        _ = appender.produced(Self.step(5), term: "T1", now: Self.at(0))
        _ = appender.stepDown(fenced: false, now: Self.at(1))
        let early = appender.expireUndecided(now: Self.at(5.9))
        let late = appender.expireUndecided(now: Self.at(6))
        #expect(!early && late, "unknown after the undecided limit")
    }

    /// What became of an ended term's steps, for replies its ViewModel releases late: stored up
    /// to the last confirmed entry, then the append in flight (undecided until the log says, or
    /// refused when fenced), then the queue (never appended). A term it does not know: unknown.
    @Test func anEndedTermsStepsHaveAFate() {
        func ended(fenced: Bool) -> LogAppender {
            var appender = Self.owner()
            guard case .append(let entry, _) = appender.produced(Self.step(5), term: "T1", now: Self.at(0))[0] else { return appender }
            _ = appender.appendFinished(.success(11), entry: entry, now: Self.at(0))  // v5 stored at 11, v6 at 12
            for version in 6...7 { _ = appender.produced(Self.step(version), term: "T1", now: Self.at(0)) }
            _ = appender.appendFinished(.success(12), entry: LogAppender.batch([Self.step(6)], node: "a", term: "T1").0, now: Self.at(0))
            _ = appender.produced(Self.step(8), term: "T1", now: Self.at(0))  // v7 in flight, v8 queued
            _ = appender.stepDown(fenced: fenced, now: Self.at(1))
            return appender
        }
        let table: [(String, Bool, Int, String, StepFate)] = [
            ("a stored step", false, 5, "T1", .stored(sequence: 12)),
            ("the append in flight", false, 7, "T1", .undecided),
            ("a queued step", false, 8, "T1", .notStored),
            ("the fenced append in flight", true, 7, "T1", .notStored),
            ("another term", false, 5, "T0", .unknown),
        ]
        for (name, fenced, version, term, fate) in table {
            #expect(ended(fenced: fenced).fate(ofVersion: version, term: term) == fate, "\(name)")
        }
        var decided = ended(fenced: false)
        let inFlight = decided.undecided!.entry
        _ = decided.logHolds(inFlight, at: 13, now: Self.at(2))
        #expect(decided.fate(ofVersion: 7, term: "T1") == .stored(sequence: 13), "the log showed the append: stored")
        var expired = ended(fenced: false)
        _ = expired.expireUndecided(now: Self.at(9))
        #expect(expired.fate(ofVersion: 7, term: "T1") == .unknown, "not decided in time")
    }

    /// The stored tail of `null` (found by the fault-injection test): a message whose steps
    /// changed no stored state must carry none, not a JSON null that every replica then failed
    /// to apply. Red with `isEmpty ? nil : …` put back.
    @Test func stepsWithoutStoredChangesCarryNoStoredTail() {
        let steps = [Self.step(5), Self.step(6)]
        for count in 1...2 {
            let (entry, carried) = LogAppender.batch(Array(steps.prefix(count)), node: "a", term: "T1")
            #expect(carried == count)
            #expect(entry.stored == nil, "\(count) step(s): \(String(describing: entry.stored))")
            #expect(entry.headers["Tether-Stored-Length"] == nil)
        }
        let changed = LogAppender.batch([Self.step(5), Self.step(6, stored: [.add(path: "/x", value: 1)])], node: "a", term: "T1").0
        #expect(changed.stored == JSONPatch.encode([.add(path: "/x", value: 1)]))
    }
}
