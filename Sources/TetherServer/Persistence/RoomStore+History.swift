import Foundation
import TetherJSON

/// A room's history as the store keeps it: each patch row's provenance (`StepProvenance`), read
/// newest first for `GET /rooms/{room}/history`.
extension RoomStore {
    /// Databases made before the history recorded who made each step get the column (NULL: not
    /// recorded), and every database a key of its own for argument digests.
    static func addProvenance(to database: SQLiteDatabase) throws(StorageError) {
        try database.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value BLOB NOT NULL)")
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
