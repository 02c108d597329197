import TetherJSON
import TetherProtocol

/// Restoring a room: its snapshot, then the patches after it replayed.
extension RoomStore {
    /// A room as stored, its patches replayed onto its snapshot; nil when there is none. The
    /// stored state is replayed the same way, from its snapshot in the row and the stored
    /// operations beside the patches (none in a database older than stored state).
    static func read(_ name: String, from database: SQLiteDatabase) throws(StorageError) -> StoredRoom? {
        var stored: StoredRoom?
        var snapshotVersion = 0
        let hasStoredState = try hasColumn("stored", in: "rooms", of: database)
        let select = "SELECT epoch, version, snapshot_version, state\(hasStoredState ? ", stored" : "") FROM rooms WHERE name = ?"
        try database.prepare(select).query(.text(name)) { row throws(StorageError) in
            let state: JSON
            do { state = try JSONParser().parse(row.blob(3)) } catch { throw .corrupt("state of \(name): \(error)") }
            snapshotVersion = row.int(2)
            stored = StoredRoom(epoch: row.text(0), version: row.int(1), state: state, patches: [])
            let storedBytes = hasStoredState ? row.blob(4) : []
            if !storedBytes.isEmpty {
                do { stored?.stored = try JSONParser().parse(storedBytes) } catch { throw .corrupt("stored state of \(name): \(error)") }
            }
        }
        guard var room = stored else { return nil }
        // Replay the patches after the snapshot; keep the newest contiguous run as history.
        var state = room.state
        var storedState = room.stored
        var reached = snapshotVersion
        var patches: [PatchFrame] = []
        let selectPatches = "SELECT frame\(hasStoredState ? ", stored" : "") FROM patches WHERE room = ? ORDER BY version"
        try database.prepare(selectPatches).query(.text(name)) { row throws(StorageError) in
            guard case .patch(_, let epoch, let from, let version, let operations)? = try? ServerMessage.decode(row.blob(0)) else {
                throw .corrupt("a stored patch of \(name) does not decode")
            }
            if let last = patches.last, last.version != from { patches.removeAll() }
            patches.append(PatchFrame(room: name, epoch: epoch, from: from, version: version, operations: operations))
            guard version > snapshotVersion else { return }
            guard from == reached else { throw .corrupt("\(name): stored patches skip from \(reached) to \(from)") }
            do { try state.apply(operations) } catch { throw .corrupt("\(name): stored patch \(from)->\(version) does not apply: \(error)") }
            let storedBytes = hasStoredState ? row.blob(1) : []
            if !storedBytes.isEmpty {
                do {
                    // None kept yet (a room from before stored state): only its whole value starts it.
                    storedState = try RoomState.stored(after: JSONPatch.decode(JSONParser().parse(storedBytes)), onto: storedState)
                } catch {
                    throw .corrupt("\(name): stored state's change \(from)->\(version) does not apply: \(error)")
                }
            }
            reached = version
        }
        guard reached == room.version else { throw .corrupt("\(name): stored at version \(room.version), patches reach \(reached)") }
        room.state = state
        room.stored = storedState
        room.patches = patches.filter { $0.epoch == room.epoch }
        return room
    }
}
