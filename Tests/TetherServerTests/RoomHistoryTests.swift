import Foundation
import Logging
import Testing
import TetherJSON
import TetherProtocol
import TetherState
@testable import TetherServer
import TetherTestSupport

/// A room's history in the store: each step's provenance in its patch row, read back newest
/// first; the query of `GET /rooms/{room}/history`; a database older than history.
@Suite("Room history: provenance in the store")
struct RoomHistoryTests {
    static let key: [UInt8] = Array(repeating: 7, count: 32)

    @Test func aStepsProvenanceIsStoredAsItsFields() {
        let action = StepProvenance(cause: .action("vote"), viewer: "alice", number: ActionNumber(client: "c7", seq: 42),
                                    args: ["option": "b"], at: 1_764_000_000)
        let json = action.json(digestKey: Self.key)
        #expect(json["cause"] == "action" && json["action"] == "vote" && json["viewer"] == "alice" && json["client"] == "c7"
                && json["seq"] == 42 && json["at"] == 1_764_000_000 && json["args"] == nil)
        let digest = json["argsDigest"]?.stringValue
        #expect(digest?.count == 16)
        #expect(StepProvenance(cause: .action("vote"), args: ["option": "b"], at: 1).json(digestKey: Self.key)["argsDigest"]?.stringValue == digest,
                "equal arguments, equal digests")
        #expect(StepProvenance(cause: .action("vote"), args: ["option": "c"], at: 1).json(digestKey: Self.key)["argsDigest"]?.stringValue != digest)
        #expect(action.json(digestKey: Array(repeating: 8, count: 32))["argsDigest"]?.stringValue != digest, "another database, another key")
        var kept = action
        kept.keepsArgs = true
        #expect(kept.json(digestKey: Self.key)["args"] == ["option": "b"] && kept.json(digestKey: Self.key)["argsDigest"] == nil)
        let timer = StepProvenance(cause: .timer(1), at: 5).json(digestKey: Self.key)
        #expect(timer == ["cause": "timer", "timer": 1, "at": 5])
        #expect(StepProvenance(cause: .action("a"), viewer: "", at: 5).json(digestKey: Self.key)["viewer"] == "")
        #expect(StepProvenance(cause: .presence, at: 5).json(digestKey: Self.key)["cause"] == "presence")
        #expect(StepProvenance(cause: .refusedAction("add"), viewer: "bob", at: 5).json(digestKey: Self.key)["cause"] == "refused")
        // What the turn read, and the presence it heard (an export refuses a step that dropped some).
        var heard = StepProvenance(cause: .action("vote"), args: ["option": "b"], keepsArgs: true, at: 5)
        heard.inputs = TurnRecord(milliseconds: 5_001, seed: 42)
        heard.heard = [["left": "m1"]]
        let heardJSON = heard.json(digestKey: Self.key)
        #expect(heardJSON["now"] == 5_001 && heardJSON["seed"] == 42 && heardJSON["heard"] == [["left": "m1"]] && heardJSON["heardDropped"] == nil)
        #expect(RoomExportAnswer.replayable(heardJSON))
        heard.heardDropped = 3
        #expect(heard.json(digestKey: Self.key)["heardDropped"] == 3 && !RoomExportAnswer.replayable(heard.json(digestKey: Self.key)))
        #expect(!RoomExportAnswer.replayable(StepProvenance(cause: .action("vote"), args: ["option": "b"], at: 5).json(digestKey: Self.key)), "a digest replays nothing")
    }

    @Test(arguments: [
        (nil, RoomHistoryAnswer.Query()),
        ("limit=5&before=9", RoomHistoryAnswer.Query(limit: 5, before: 9)),
        ("viewer=alice&action=vote", RoomHistoryAnswer.Query(viewer: "alice", action: "vote")),
        ("viewer=&limit=1000", RoomHistoryAnswer.Query(limit: 1_000)),
    ] as [(String?, RoomHistoryAnswer.Query)])
    func aQueryIsRead(text: String?, expected: RoomHistoryAnswer.Query) throws {
        #expect(try RoomHistoryAnswer.query(text).get() == expected)
    }

    @Test(arguments: ["limit=0", "limit=1001", "limit=ten", "before=0", "before=x"])
    func aBadQueryIsRefusedSayingWhy(text: String) {
        guard case .failure(let error) = RoomHistoryAnswer.query(text) else {
            Issue.record("\(text) taken")
            return
        }
        #expect(error.code == .badMessage && error.message.contains(String(text.prefix { $0 != "=" })))
    }

    @Test func aStoredStepIsReadBackWithItsProvenanceNewestFirst() throws {
        let directory = Daemon.temporaryDirectory()
        let store = try RoomStore(directory: directory, durability: .batch, historyLimit: 100, logger: Logger(label: "test"))
        defer { store.close() }
        var start = RoomStore.Commit(room: "todo:a", kind: "todo", epoch: "E", patch: nil, version: 0,
                                     state: RoomStore.Snapshot(RoomState(published: ["items": []], stored: .null)), lastChange: 1)
        start.startsEpoch = true
        store.commit(start)
        for version in 1...3 {
            let patch = PatchFrame(room: "todo:a", epoch: "E", from: version - 1, version: version,
                                   operations: [.add(path: JSONPointer("/items/-"), value: .int(version))])
            var commit = RoomStore.Commit(room: "todo:a", kind: "todo", epoch: "E", patch: patch, version: version, state: nil, lastChange: version)
            commit.provenance = version == 2 ? StepProvenance(cause: .timer(0), at: version)
                                             : StepProvenance(cause: .action("add"), viewer: "v\(version)", at: version)
            store.commit(commit)
        }
        let history = try #require(try store.history(room: "todo:a", before: nil, limit: 10))
        #expect(history.epoch == "E" && history.version == 3 && history.oldest == 1)
        let steps = history.steps.map { RoomHistoryAnswer.json($0) }
        #expect(steps.map { $0["version"]?.intValue } == [3, 2, 1])
        #expect(steps.map { $0["cause"]?.stringValue } == ["action", "timer", "action"])
        #expect(steps[0]["viewer"] == "v3" && steps[0]["ops"] == 1 && steps[0]["paths"] == ["/items/-"])
        #expect(try store.history(room: "todo:a", before: 3, limit: 1)?.steps.map(\.version) == [2], "a page before a version")
        #expect(try store.history(room: "todo:none", before: nil, limit: 10) == nil)
    }

    @Test func aDatabaseOlderThanHistoryGetsTheColumnAndItsStepsSayNotRecorded() throws {
        let directory = Daemon.temporaryDirectory()
        let path = try RoomStoreMigrationTests.oldDatabase(in: directory)
        let old = try SQLiteDatabase(path: path)
        try old.execute("""
            INSERT INTO patches VALUES('counter:old', 3, CAST('{"type":"patch","room":"counter:old","epoch":"e1","from":2,"version":3,"ops":[{"op":"replace","path":"/count","value":3}]}' AS BLOB));
            """)
        let store = try RoomStore(directory: directory, durability: .batch, historyLimit: 10, logger: Logger(label: "test"))
        defer { store.close() }
        let steps = try #require(try store.history(room: "counter:old", before: nil, limit: 10)).steps.map { RoomHistoryAnswer.json($0) }
        #expect(steps.count == 1 && steps[0]["cause"] == "unknown" && steps[0]["version"] == 3 && steps[0]["paths"] == ["/count"])
        #expect(try RoomStore.digestKey(of: SQLiteDatabase(path: path)) == store.digestKey, "the key is the database's, kept")
    }
}

/// The state at any kept version, rebuilt by the store from a snapshot and the patches after
/// it, equals the state the room had then: random steps, every version checked, with patches
/// and snapshots trimmed as a long-lived room's are.
@Suite("Room history: the state at a version")
struct StateAtVersionTests {
    /// A random step on `{"n": Int, "items": [Int]}`.
    static func step(_ state: JSON, random: inout some RandomNumberGenerator) -> [PatchOperation] {
        let items = state["items"]?.arrayValue ?? []
        switch Int.random(in: 0..<3, using: &random) {
        case 0: return [.replace(path: try! JSONPointer(parsing: "/n"), value: .int(Int.random(in: 0..<1_000, using: &random)))]
        case 1 where !items.isEmpty: return [.remove(path: try! JSONPointer(parsing: "/items/0"))]
        default: return [.add(path: try! JSONPointer(parsing: "/items/-"), value: .int(Int.random(in: 0..<1_000, using: &random)))]
        }
    }

    @Test(arguments: [1, 2, 3])
    func everyKeptVersionRebuildsToTheStateItHad(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let store = try RoomStore(directory: Daemon.temporaryDirectory(), durability: .batch, historyLimit: 30, logger: Logger(label: "test"))
        defer { store.close() }
        var state: JSON = ["n": 0, "items": []]
        var states = [state]
        var start = RoomStore.Commit(room: "r", kind: "k", epoch: "E", patch: nil, version: 0,
                                     state: RoomStore.Snapshot(RoomState(published: state, stored: .null)), lastChange: 0)
        start.startsEpoch = true
        store.commit(start)
        for version in 1...250 {
            let operations = Self.step(state, random: &random)
            try state.apply(operations)
            states.append(state)
            let patch = PatchFrame(room: "r", epoch: "E", from: version - 1, version: version, operations: operations)
            // A snapshot every 10 versions, as a room's log takes one every 100.
            let snapshot = version % 10 == 0 ? RoomStore.Snapshot(RoomState(published: state, stored: .null)) : nil
            store.commit(RoomStore.Commit(room: "r", kind: "k", epoch: "E", patch: patch, version: version, state: snapshot, lastChange: version))
        }
        var kept = 0
        for version in 0...250 {
            switch try store.state(room: "r", at: version) {
            case .state(let epoch, let rebuilt):
                #expect(epoch == "E" && rebuilt == states[version], "version \(version)")
                kept += 1
            case .notKept(let oldest, let newest):
                #expect(version < oldest && newest == 250, "version \(version) is kept from \(oldest)")
            case .noRoom:
                Issue.record("the room is stored")
            }
        }
        #expect(kept >= 30, "at least the patches kept for resuming: \(kept)")
        #expect(try store.state(room: "r", at: 251) == .notKept(oldest: 250 - kept + 1, newest: 250))
        #expect(try store.state(room: "none", at: 1) == .noRoom)
    }

    /// A kind's retention, one step a minute for 300 minutes: at least its last `versions` steps
    /// and those younger than its age are kept, and a history snapshot every `snapshotEvery`
    /// versions, so every kept version rebuilds from one snapshot and at most that many patches.
    @Test(arguments: [
        // Patches go up to a history snapshot: 280 is the last one 50 versions back.
        (HistoryRetention(versions: 50, snapshotEvery: 20), 241),
        // 60 minutes: steps from 240 on (at 240 × 60 s) are young; 200, the snapshot before.
        (HistoryRetention(versions: 10, ageSeconds: 3_600), 201),
        (HistoryRetention(), 1),  // the server's 1,000
    ])
    func aKindsRetentionKeepsItsVersionsAndAge(retention: HistoryRetention, oldest: Int) throws {
        let directory = Daemon.temporaryDirectory()
        let store = try RoomStore(directory: directory, durability: .batch, historyLimit: 1_000, logger: Logger(label: "test"))
        defer { store.close() }
        var state: JSON = ["n": 0]
        var start = RoomStore.Commit(room: "r", kind: "k", epoch: "E", patch: nil, version: 0,
                                     state: RoomStore.Snapshot(RoomState(published: state, stored: .null)), lastChange: 0)
        start.startsEpoch = true
        store.commit(start)
        for version in 1...300 {
            let operations: [PatchOperation] = [.replace(path: try JSONPointer(parsing: "/n"), value: .int(version))]
            try state.apply(operations)
            let patch = PatchFrame(room: "r", epoch: "E", from: version - 1, version: version, operations: operations)
            // As the room's log does: a snapshot every 100 versions, or every snapshotEvery when fewer.
            let snapshotDue = version % min(100, retention.snapshotEvery ?? 100) == 0
            var commit = RoomStore.Commit(room: "r", kind: "k", epoch: "E", patch: patch, version: version,
                                          state: snapshotDue ? RoomStore.Snapshot(RoomState(published: state, stored: .null)) : nil, lastChange: version * 60)
            commit.provenance = StepProvenance(cause: .action("set"), at: version * 60)
            commit.retention = retention
            store.commit(commit)
        }
        #expect(try store.history(room: "r", before: nil, limit: 1_000)?.oldest == oldest)
        // Every kept version rebuilds, from the snapshot before the oldest patch on.
        for version in (oldest - 1)...300 {
            let rebuilt = try store.state(room: "r", at: version)
            #expect(rebuilt == .state(epoch: "E", state: ["n": .int(version)]), "version \(version): \(rebuilt)")
        }
        if let every = retention.snapshotEvery {
            let database = try SQLiteDatabase(path: (directory as NSString).appendingPathComponent(RoomStore.databaseFileName))
            var snapshots: [Int] = []
            try database.prepare("SELECT version FROM history_snapshots WHERE room = 'r' ORDER BY version").query { snapshots.append($0.int(0)) }
            #expect(snapshots == Array(stride(from: oldest - 1, through: 300, by: every)), "one every \(every) from the oldest kept: \(snapshots)")
        }
    }
}
