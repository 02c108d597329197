import Foundation
import TetherJSON
import TetherProtocol

/// A room's history as the store keeps it: each patch row's provenance (`StepProvenance`), read
/// newest first for `GET /rooms/{room}/history`.
extension RoomStore {
    /// Databases made before the history recorded who made each step get the column (NULL: not
    /// recorded), and every database a key of its own for argument digests.
    static func addProvenance(to database: SQLiteDatabase) throws(StorageError) {
        try database.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        try database.execute("CREATE TABLE IF NOT EXISTS history_snapshots(room TEXT NOT NULL, version INTEGER NOT NULL, state BLOB NOT NULL, stored BLOB, PRIMARY KEY(room, version)) WITHOUT ROWID")
        if try !hasColumn("stored", in: "history_snapshots", of: database) {
            try database.execute("ALTER TABLE history_snapshots ADD COLUMN stored BLOB")
        }
        if try !hasColumn("at", in: "patches", of: database) {
            try database.execute("ALTER TABLE patches ADD COLUMN at INTEGER")  // seconds since 1970: retention by age
        }
        guard try !hasColumn("provenance", in: "patches", of: database) else { return }
        try database.execute("ALTER TABLE patches ADD COLUMN provenance BLOB")
    }

    static func digestKey(of database: SQLiteDatabase) throws(StorageError) -> [UInt8] {
        var key: [UInt8] = []
        try database.prepare("SELECT value FROM meta WHERE key = 'history-digest-key'").query { row in key = row.blob(0) }
        guard key.isEmpty else { return key }
        key = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try database.prepare("INSERT INTO meta(key, value) VALUES('history-digest-key', ?)").run(.blob(key))
        return key
    }

    /// In a snapshot's transaction: keeps the published `state` at `version` as a history
    /// snapshot when the room has none, when `every` versions passed since the last one (a kind's
    /// retention), or else when its kept patches since the last one hold at least the state's
    /// bytes (so history snapshots never take more room than the patches they stand for). The ViewModel's stored state is kept
    /// beside it for exports (`export(room:from:to:)`), never shown.
    static func keepHistorySnapshot(room: String, version: Int, state: [UInt8], stored: [UInt8], every: Int? = nil, startsEpoch: Bool,
                                    in database: SQLiteDatabase) throws(StorageError) {
        if startsEpoch { try forgetHistory(room: room, in: database) }
        var last = -1
        try database.prepare("SELECT coalesce(max(version), -1) FROM history_snapshots WHERE room = ?").query(.text(room)) { last = $0.int(0) }
        var due = last < 0
        if !due, let every {
            due = version - last >= every
        } else if !due, last < version {
            var bytes = 0
            try database.prepare("SELECT coalesce(sum(length(frame)), 0) FROM patches WHERE room = ? AND version > ? AND version <= ?")
                .query(.text(room), .int(last), .int(version)) { bytes = $0.int(0) }
            due = bytes >= state.count
        }
        if due {
            try database.prepare("INSERT OR REPLACE INTO history_snapshots(room, version, state, stored) VALUES(?, ?, ?, ?)")
                .run(.text(room), .int(version), .blob(state), .blob(stored))
        }
    }

    /// After a trim: the snapshots older than the newest one at or before the oldest kept patch's
    /// predecessor rebuild nothing.
    static func forgetUnusedHistorySnapshots(room: String, in database: SQLiteDatabase) throws(StorageError) {
        try database.prepare("""
            DELETE FROM history_snapshots WHERE room = ?1 AND version < (
              SELECT max(version) FROM history_snapshots WHERE room = ?1 AND version <= (SELECT min(version) - 1 FROM patches WHERE room = ?1))
            """).run(.text(room))
    }

    static func forgetHistory(room: String, in database: SQLiteDatabase) throws(StorageError) {
        try database.prepare("DELETE FROM history_snapshots WHERE room = ?").run(.text(room))
    }

    /// The published state of `room` at `version`: the newest snapshot at or before it (the
    /// room's own, or a history snapshot) with the kept patches after it replayed.
    func state(room: String, at version: Int) throws(StorageError) -> StateAtVersion {
        try read { database throws(StorageError) -> StateAtVersion in
            var row: (epoch: String, version: Int, snapshotVersion: Int, state: [UInt8])?
            try database.prepare("SELECT epoch, version, snapshot_version, state FROM rooms WHERE name = ?").query(.text(room)) { found in
                row = (found.text(0), found.int(1), found.int(2), found.blob(3))
            }
            guard let row else { return .noRoom }
            var oldest = row.snapshotVersion
            try database.prepare("SELECT coalesce(min(version), ?2) FROM history_snapshots WHERE room = ?1").query(.text(room), .int(row.snapshotVersion)) {
                oldest = min(oldest, $0.int(0))
            }
            guard version <= row.version else { return .notKept(oldest: oldest, newest: row.version) }
            var base: (version: Int, bytes: [UInt8]) = row.snapshotVersion <= version ? (row.snapshotVersion, row.state) : (-1, [])
            try database.prepare("SELECT version, state FROM history_snapshots WHERE room = ? AND version <= ? AND version > ? ORDER BY version DESC LIMIT 1")
                .query(.text(room), .int(version), .int(base.version)) { base = ($0.int(0), $0.blob(1)) }
            guard base.version >= 0 else { return .notKept(oldest: oldest, newest: row.version) }
            var state: JSON
            do { state = try JSONParser().parse(base.bytes) } catch { throw .corrupt("a snapshot of \(room): \(error)") }
            var reached = base.version
            try database.prepare("SELECT frame FROM patches WHERE room = ? AND version > ? AND version <= ? ORDER BY version")
                .query(.text(room), .int(base.version), .int(version)) { patch throws(StorageError) in
                    guard case .patch(_, _, let from, let to, let operations)? = try? ServerMessage.decode(patch.blob(0)), from == reached else { return }
                    do { try state.apply(operations) } catch { throw .corrupt("\(room): stored patch \(from)->\(to) does not apply: \(error)") }
                    reached = to
                }
            guard reached == version else { return .notKept(oldest: oldest, newest: row.version) }
            return .state(epoch: row.epoch, state: state)
        } ?? .noRoom
    }

    /// Up to `limit` steps of `room` before version `before` (nil: the newest), newest first;
    /// nil when the store holds no such room.
    func history(room: String, before: Int?, limit: Int) throws(StorageError) -> RoomHistory? {
        try read { database throws(StorageError) in
            var history: RoomHistory?
            try database.prepare("SELECT epoch, version FROM rooms WHERE name = ?").query(.text(room)) { row in
                history = RoomHistory(epoch: row.text(0), version: row.int(1))
            }
            guard var found = history else { return nil }
            try database.prepare("SELECT min(version) FROM patches WHERE room = ?").query(.text(room)) { row in
                found.oldest = row.int(0)
            }
            try database.prepare("""
                SELECT version, frame, provenance FROM patches WHERE room = ? AND version < ? ORDER BY version DESC LIMIT ?
                """).query(.text(room), .int(before ?? Int.max), .int(limit)) { row in
                found.steps.append(RoomHistory.Step(version: row.int(0), frame: row.blob(1), provenance: row.blob(2)))
            }
            return found
        }
    }
}

/// A room's published state at a version, as its store can rebuild it.
enum StateAtVersion: Sendable, Equatable {
    case state(epoch: String, state: JSON)
    /// Not rebuildable: the store rebuilds versions from `oldest` to `newest`.
    case notKept(oldest: Int, newest: Int)
    case noRoom
}

/// The steps of a room that its store (or a cluster's log) still holds, newest first.
struct RoomHistory: Sendable {
    struct Step: Sendable {
        let version: Int
        /// The patch as clients got it.
        var frame: [UInt8] = []
        /// `StepProvenance`'s stored form; empty when not recorded (a step older than history).
        let provenance: [UInt8]
        /// Its operations when already read (a cluster's merged entry, split); else the frame's.
        var operations: [JSON]? = nil
    }

    let epoch: String
    let version: Int
    var oldest = 0
    var steps: [Step] = []
}
