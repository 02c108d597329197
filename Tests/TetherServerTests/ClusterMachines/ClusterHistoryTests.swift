import Testing
import TetherJSON
import TetherProtocol
import TetherState
@testable import TetherServer

/// A cluster room's history: the owner's records ride in its log entries, merged appends keep
/// one per version, and the reader splits them back with their operations.
@Suite("Cluster history: records in log entries")
struct ClusterHistoryRecordTests {
    static func step(_ version: Int, operations: Int = 1, record: JSON? = nil) -> LogAppender.Step {
        let ops = (0..<operations).map { PatchOperation.replace(path: try! JSONPointer(parsing: "/n\($0)"), value: .int(version)) }
        let provenance = record ?? ["cause": "action", "action": "add", "viewer": .string("v\(version)"), "version": .int(version), "ops": .int(operations)]
        return .patch(PatchFrame(room: "r", epoch: "E", from: version - 1, version: version, operations: ops),
                      stored: [], projections: nil, applied: nil, provenance: provenance.encoded())
    }

    @Test func aMergedAppendKeepsOneRecordPerVersionAndTheReaderSplitsItsOperations() throws {
        let (entry, count) = LogAppender.batch([Self.step(5, operations: 2), Self.step(6), Self.step(7, operations: 3)], node: "a", term: "T")
        #expect(count == 3 && entry.from == 4 && entry.version == 7)
        let read = try #require(LogEntry(headers: entry.headers, data: entry.data), "through the message's headers")
        let steps = ClusterHistoryReader.split(read).map { RoomHistoryAnswer.json($0) }
        #expect(steps.map { $0["version"]?.intValue } == [5, 6, 7])
        #expect(steps.map { $0["ops"]?.intValue } == [2, 1, 3])
        #expect(steps[0]["paths"] == ["/n0", "/n1"] && steps[2]["paths"] == ["/n0", "/n1", "/n2"] && steps[1]["viewer"] == "v6")
    }

    @Test func anAppendStopsMergingAtTheRecordsBudget() {
        let big: JSON = ["cause": "action", "args": .string(String(repeating: "x", count: LogAppender.maxProvenanceBytes / 2)), "version": 1, "ops": 1]
        let (_, count) = LogAppender.batch([Self.step(1, record: big), Self.step(2, record: big), Self.step(3, record: big)], node: "a", term: "T")
        #expect(count == 1, "two records over the budget do not go in one message")
    }

    @Test func anEntryWithoutRecordsIsOneStepOfUnknownCause() {
        let entry = LogEntry(kind: .patch, epoch: "E", from: 2, version: 4, node: "a", term: "T",
                             frame: PatchFrame(room: "r", epoch: "E", from: 2, version: 4, operations: [.remove(path: JSONPointer("/x"))]).frame)
        let steps = ClusterHistoryReader.split(entry).map { RoomHistoryAnswer.json($0) }
        #expect(steps.count == 1 && steps[0]["version"] == 4 && steps[0]["cause"] == "unknown" && steps[0]["ops"] == 1)
    }

    @Test func theHistoryIsTheLastEpochsNewestFirst() throws {
        func entry(_ epoch: String, _ version: Int, kind: LogEntry.Kind = .patch) -> LogEntry {
            guard kind == .patch, case .patch(let frame, _, _, _, _, let provenance) = Self.step(version) else {
                return LogEntry(kind: kind, epoch: epoch, from: version, version: version, node: "a", term: "T", frame: [])
            }
            return LogEntry(kind: .patch, epoch: epoch, from: version - 1, version: version, node: "a", term: "T", frame: frame.frame,
                            steps: provenance.map { [UInt8(ascii: "[")] + $0 + [UInt8(ascii: "]")] })
        }
        let history = try #require(ClusterHistoryReader.history([entry("OLD", 1), entry("NEW", 0, kind: .snapshot), entry("NEW", 1), entry("NEW", 2)]))
        #expect(history.epoch == "NEW" && history.version == 2 && history.oldest == 1 && history.steps.map(\.version) == [2, 1])
        #expect(ClusterHistoryReader.history([]) == nil)
    }

    /// The state at a version from the log: the epoch's start, then each version's share of the
    /// (merged) entries after it; before the log's oldest epoch start, not rebuilt.
    @Test func theStateAtEachVersionIsRebuiltFromTheLog() throws {
        let start = LogEntry(kind: .snapshot, epoch: "E", from: 4, version: 4, node: "a", term: "T",
                             frame: ServerMessage.snapshot(room: "r", epoch: "E", version: 4, state: ["n0": 0]).encoded())
        let (merged, _) = LogAppender.batch([Self.step(5), Self.step(6), Self.step(7)], node: "a", term: "T")
        let (single, _) = LogAppender.batch([Self.step(8)], node: "b", term: "U")
        let entries = [start, try #require(LogEntry(headers: merged.headers, data: merged.data)), single]
        for version in 4...8 {
            #expect(ClusterHistoryReader.state(at: version, entries) == .state(epoch: "E", state: ["n0": .int(version == 4 ? 0 : version)]), "v\(version)")
        }
        #expect(ClusterHistoryReader.state(at: 3, entries) == .notKept(oldest: 4, newest: 8))
        #expect(ClusterHistoryReader.state(at: 9, entries) == .notKept(oldest: 4, newest: 8))
        #expect(ClusterHistoryReader.state(at: 6, Array(entries.dropFirst())) == .notKept(oldest: 9, newest: 8), "its start trimmed from the log")
        #expect(ClusterHistoryReader.state(at: 1, []) == .noRoom)
    }

    /// Once the epoch's start has left the log, a checkpoint rebuilds the versions from its own
    /// on (with the stored state it carries); the versions before it are not kept.
    @Test func aCheckpointRebuildsTheVersionsAfterItWhenTheStartIsGone() throws {
        let checkpoint = LogEntry(kind: .checkpoint, epoch: "E", from: 6, version: 6, node: "a", term: "T",
                                  frame: ServerMessage.snapshot(room: "r", epoch: "E", version: 6, state: ["n0": 6]).encoded(), stored: ["s": 6])
        let entries = [LogAppender.batch([Self.step(5)], node: "a", term: "T").0, LogAppender.batch([Self.step(6)], node: "a", term: "T").0,
                       checkpoint, LogAppender.batch([Self.step(7), Self.step(8)], node: "a", term: "T").0]
        let read = try entries.map { try #require(LogEntry(headers: $0.headers, data: $0.data), "through the message's headers") }
        #expect(read[2].kind == .checkpoint && read[2].stored == ["s": 6])
        for version in 6...8 {
            #expect(ClusterHistoryReader.room(at: version, read) == .room(epoch: "E", state: ["n0": .int(version)], stored: ["s": 6]), "v\(version)")
        }
        #expect(ClusterHistoryReader.state(at: 5, read) == .notKept(oldest: 6, newest: 8), "before the oldest checkpoint")
        #expect(ClusterHistoryReader.history(read)?.steps.map(\.version) == [8, 7, 6, 5], "a checkpoint is no step")
    }

    /// An export from the log: each version's share of a merged entry; the entry's stored
    /// changes with its last version, the others marked `storedLater`; a start inside an entry
    /// whose steps changed the stored state is not exported.
    @Test func anExportSplitsMergedEntriesAndKeepsTheirStoredChangesWithTheLast() throws {
        let start = LogEntry(kind: .snapshot, epoch: "E", from: 4, version: 4, node: "a", term: "T",
                             frame: ServerMessage.snapshot(room: "r", epoch: "E", version: 4, state: ["n0": 0]).encoded(), stored: ["k": 0])
        let storedChange: [PatchOperation] = [.replace(path: try JSONPointer(parsing: "/k"), value: 7)]
        guard case .patch(let seven, _, _, _, _, let record) = Self.step(7) else { return }
        let (merged, _) = LogAppender.batch([Self.step(5), Self.step(6), .patch(seven, stored: storedChange, projections: nil, applied: nil, provenance: record)],
                                            node: "a", term: "T")
        let entries = [start, try #require(LogEntry(headers: merged.headers, data: merged.data))]
        guard case .export(let export) = ClusterHistoryReader.export(room: "todo:x", from: 4, to: 7, entries) else {
            Issue.record("not exported")
            return
        }
        #expect(export.steps.map(\.version) == [5, 6, 7] && export.stored == ["k": 0] && export.kind == "todo")
        #expect(export.steps.map(\.storedLater) == [true, true, false] && export.steps[2].storedOperations == storedChange.map(\.json))
        #expect(export.steps[1].provenance["viewer"] == "v6" && export.steps[1].operations.count == 1)
        #expect(ClusterHistoryReader.export(room: "todo:x", from: 5, to: 7, entries) == .notKept(oldest: 6, newest: 7), "stored state at 5 unknown")
        #expect(ClusterHistoryReader.room(at: 7, entries) == .room(epoch: "E", state: ["n0": 7], stored: ["k": 7]))
    }
}
