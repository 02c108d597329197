import TetherJSON
import TetherProtocol

/// A stored room's steps between two versions with what a replay needs (`tether export`,
/// `TestRoom.replay`): the published and the stored state at the first, then each step's
/// provenance, patch and operations on the stored state.
struct RoomExport: Sendable, Equatable {
    struct Step: Sendable, Equatable {
        let version: Int
        /// `StepProvenance`'s stored form (`{"cause": "unknown"}` for a step older than history).
        let provenance: JSON
        let operations: [JSON]
        let storedOperations: [JSON]
        /// Its stored changes come with a later step's (one log entry on a cluster held both).
        var storedLater = false
    }

    let kind: String
    let epoch: String
    let from: Int
    let to: Int
    let state: JSON
    /// The ViewModel's stored state at `from`; nil where the store kept none with its snapshot.
    let stored: JSON?
    let steps: [Step]
}

enum RoomExportRead: Sendable, Equatable {
    case export(RoomExport)
    /// Not rebuildable: the store rebuilds versions from `oldest` to `newest`.
    case notKept(oldest: Int, newest: Int)
    case noRoom
}

extension RoomStore {
    /// The steps of `room` after `from` up to `to`, and its state at `from`: the newest snapshot
    /// at or before `from` (the room's own or a history snapshot, with the stored state kept
    /// beside it) with the kept patches after it replayed.
    func export(room: String, from: Int, to: Int) throws(StorageError) -> RoomExportRead {
        try read { database throws(StorageError) -> RoomExportRead in
            var row: (kind: String, epoch: String, version: Int, snapshotVersion: Int, state: [UInt8], stored: [UInt8])?
            try database.prepare("SELECT kind, epoch, version, snapshot_version, state, stored FROM rooms WHERE name = ?").query(.text(room)) { found in
                row = (found.text(0), found.text(1), found.int(2), found.int(3), found.blob(4), found.blob(5))
            }
            guard let row else { return .noRoom }
            var oldest = row.snapshotVersion
            try database.prepare("SELECT coalesce(min(version), ?2) FROM history_snapshots WHERE room = ?1").query(.text(room), .int(row.snapshotVersion)) {
                oldest = min(oldest, $0.int(0))
            }
            let notKept = RoomExportRead.notKept(oldest: oldest, newest: row.version)
            guard from <= to, to <= row.version else { return notKept }
            var base: (version: Int, state: [UInt8], stored: [UInt8]) = row.snapshotVersion <= from ? (row.snapshotVersion, row.state, row.stored) : (-1, [], [])
            try database.prepare("SELECT version, state, stored FROM history_snapshots WHERE room = ? AND version <= ? AND version > ? ORDER BY version DESC LIMIT 1")
                .query(.text(room), .int(from), .int(base.version)) { base = ($0.int(0), $0.blob(1), $0.blob(2)) }
            guard base.version >= 0 else { return notKept }
            var state: JSON
            var stored: JSON?
            do {
                state = try JSONParser().parse(base.state)
                stored = base.stored.isEmpty ? nil : try JSONParser().parse(base.stored)
            } catch {
                throw .corrupt("a snapshot of \(room): \(error)")
            }
            var (stateAtFrom, storedAtFrom) = (state, stored)
            var steps: [RoomExport.Step] = []
            var reached = base.version
            try database.prepare("SELECT frame, stored, provenance FROM patches WHERE room = ? AND version > ? AND version <= ? ORDER BY version")
                .query(.text(room), .int(base.version), .int(to)) { patch throws(StorageError) in
                    guard case .patch(_, _, let start, let version, let operations)? = try? ServerMessage.decode(patch.blob(0)), start == reached else { return }
                    var storedOperations: [PatchOperation] = []
                    do {
                        try state.apply(operations)
                        if !patch.blob(1).isEmpty { storedOperations = try JSONPatch.decode(JSONParser().parse(patch.blob(1))) }
                        stored = try RoomState.stored(after: storedOperations, onto: stored)
                    } catch {
                        throw .corrupt("\(room): stored step \(start)->\(version) does not apply: \(error)")
                    }
                    reached = version
                    if version == from { (stateAtFrom, storedAtFrom) = (state, stored) }
                    guard version > from else { return }
                    let provenance = (try? JSONParser().parse(patch.blob(2))) ?? ["cause": "unknown"]
                    steps.append(RoomExport.Step(version: version, provenance: provenance, operations: operations.map(\.json),
                                                 storedOperations: storedOperations.map(\.json)))
                }
            guard reached == to else { return notKept }
            return .export(RoomExport(kind: row.kind, epoch: row.epoch, from: from, to: to, state: stateAtFrom, stored: storedAtFrom, steps: steps))
        } ?? .noRoom
    }
}
