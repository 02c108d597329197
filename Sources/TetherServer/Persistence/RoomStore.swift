import Foundation
import Logging
import Synchronization
import TetherJSON
import TetherProtocol
import TetherState

/// What an acknowledgement promises about a change surviving a crash.
public enum Durability: String, Sendable, CaseIterable {
    /// Committed and fsynced before the ack (and the patch) go out: survives a power loss.
    case strict
    /// Committed to the write-ahead log before the ack: survives a crash of the daemon
    /// (`kill -9`), not of the machine. Commits are grouped, so throughput holds.
    case batch
    /// Acks don't wait for the disk: a crash may lose the most recent acknowledged changes.
    case none
}

/// A room as stored: its epoch and version, the state at `snapshotVersion`, and the patches
/// after it (and some before, for resuming clients).
struct StoredRoom {
    var epoch: String
    var version: Int
    var state: JSON
    /// The ViewModel's stored state at `version` (`ViewModelContext.stored`); nil: none kept
    /// (a database written before stored state existed), its members start as declared.
    var stored: JSON? = nil
    var patches: [PatchFrame]
    /// The numbered actions its stored steps applied, and at which version (`ActionOutcomes`).
    var actions: [AppliedAction] = []
    /// When its last version step was made, in seconds since 1970 (0: not read; backups of
    /// databases older than the column are checked without it).
    var lastChange = 0
}

/// One stored room as the room list shows it, without its state.
package struct StoredRoomSummary: Sendable, Equatable {
    package var name: String
    package var kind: String
    package var version: Int
    /// Seconds since 1970.
    package var lastChange: Int
    /// The encoded state as last snapshotted (at most `snapshotInterval` versions old).
    package var bytes: Int
}

/// Keeps shared rooms in SQLite (WAL mode), in one database file in the data directory.
///
/// One writer thread owns the connection. Rooms submit jobs — commits of version steps and
/// callbacks — and the writer runs them in submission order, committing every queued step in one
/// transaction ("group commit") before running the callbacks that follow them. A room routes
/// everything it sends through here, so no client ever sees a version that is not yet durable.
package final class RoomStore: Sendable {
    /// A full snapshot of a room's state is written every this many versions, bounding replay.
    static let snapshotInterval = 100
    /// The database in the data directory.
    static let databaseFileName = "tether.sqlite"

    let durability: Durability
    private let historyLimit: Int
    private let logger: Logger
    private let jobs = Mutex<[Job]>([])
    private let wake = DispatchSemaphore(value: 0)
    private let database: Mutex<SQLiteDatabase?>
    private let path: String
    private let lock: DataDirectoryLock
    /// The key of the history's argument digests (`StepProvenance`), the database's own.
    let digestKey: [UInt8]

    private enum Job: @unchecked Sendable {
        case write(Write)
        case callback(() -> Void)
        case read((SQLiteDatabase?) -> Void)
        case stop
    }

    /// What a job changes, in submission order within one transaction.
    private enum Write {
        case commit(Commit)
        /// The room and its patches are removed.
        case delete(room: String)
        /// Rows of another table (the webhook outbox), in the same transaction as the batch.
        case statement(@Sendable (SQLiteDatabase) throws(StorageError) -> Void)
    }

    /// A room's state encoded for the `rooms` row.
    struct Snapshot: Sendable {
        let published: [UInt8]
        let stored: [UInt8]

        init(_ state: RoomState) {
            published = state.published.encoded()
            stored = state.stored.encoded()
        }
    }

    struct Commit: Sendable {
        let room: String
        let kind: String
        let epoch: String
        let patch: PatchFrame?
        let version: Int
        /// The state at `version`, when a snapshot is due (or the room is new or stopping).
        let state: Snapshot?
        /// The operations `patch` made on the ViewModel's stored state, encoded (nil: none).
        var storedOperations: [UInt8]?
        /// A new epoch: patches of the previous one are deleted.
        var startsEpoch = false
        /// The numbered action `patch` applies: kept in the same transaction, with the last
        /// `ActionOutcomes.perClient` of its client.
        var applied: ActionNumber?
        /// When the room's state last changed, in seconds since 1970 (a stopping room commits its
        /// state without changing it).
        let lastChange: Int
        /// The step's webhook events, recorded in its transaction: acked means they will be sent.
        var webhooks: [WebhookDelivery] = []
        /// What made the step, who and when (encoded on the writer thread, into its patch row).
        var provenance: StepProvenance?
        /// How much of the room's history to keep, applied when the commit carries a snapshot.
        var retention = HistoryRetention()
    }

    /// Takes the data directory's lock, then opens (or creates) the database.
    package init(directory: String, durability: Durability, historyLimit: Int, logger: Logger) throws(StartupError) {
        self.durability = durability
        self.historyLimit = historyLimit
        self.logger = logger
        if let failure = Self.makeDirectory(directory) { throw .dataDirectory(directory, failure) }
        lock = try DataDirectoryLock(directory: directory)
        path = (directory as NSString).appendingPathComponent(Self.databaseFileName)
        do {
            let database = try Self.open(path, durability: durability)
            digestKey = try Self.digestKey(of: database)
            self.database = Mutex(database)
        } catch {
            lock.release()
            throw .storage(error.description)
        }
        let thread = Thread { [self] in writerLoop() }
        thread.name = "tether-store"
        thread.start()
    }

    private static func open(_ path: String, durability: Durability) throws(StorageError) -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA journal_mode=WAL")
        try database.execute("PRAGMA synchronous=\(durability == .strict ? "FULL" : "NORMAL")")
        try database.execute("""
            CREATE TABLE IF NOT EXISTS rooms(
                name TEXT PRIMARY KEY, kind TEXT NOT NULL, epoch TEXT NOT NULL,
                version INTEGER NOT NULL, snapshot_version INTEGER NOT NULL, state BLOB NOT NULL,
                last_change INTEGER NOT NULL DEFAULT 0, stored BLOB);
            CREATE TABLE IF NOT EXISTS patches(
                room TEXT NOT NULL, version INTEGER NOT NULL, frame BLOB NOT NULL, stored BLOB,
                PRIMARY KEY(room, version)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS actions(
                room TEXT NOT NULL, client TEXT NOT NULL, seq INTEGER NOT NULL, version INTEGER NOT NULL,
                PRIMARY KEY(room, client, seq)) WITHOUT ROWID;
            """)
        try addLastChange(to: database)
        try addStoredState(to: database)
        try createOutbox(in: database)
        try addProvenance(to: database)
        return database
    }

    /// Databases made before ViewModels stored state of their own get its columns (NULL: none).
    private static func addStoredState(to database: SQLiteDatabase) throws(StorageError) {
        for table in ["rooms", "patches"] where try !hasColumn("stored", in: table, of: database) {
            try database.execute("ALTER TABLE \(table) ADD COLUMN stored BLOB")
        }
    }

    /// Databases made before rooms recorded their last change get the column; their rooms count
    /// as changed now, so none expires the moment an older daemon's data is upgraded.
    private static func addLastChange(to database: SQLiteDatabase) throws(StorageError) {
        guard try !hasColumn("last_change", in: "rooms", of: database) else { return }
        try database.transaction { () throws(StorageError) in
            try database.execute("ALTER TABLE rooms ADD COLUMN last_change INTEGER NOT NULL DEFAULT 0")
            try database.execute("UPDATE rooms SET last_change = CAST(strftime('%s', 'now') AS INTEGER)")
        }
    }

    /// `mkdir -p`; returns the OS's reason when a level can't be made.
    static func makeDirectory(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o750) != 0, errno != EEXIST {
                return "\(String(cString: strerror(errno))) (mkdir \(prefix))"
            }
        }
        return nil
    }

    // MARK: Submitting (any thread)

    func commit(_ commit: Commit) { submit(.write(.commit(commit))) }

    /// Removes the room, after every commit submitted before (a deleted room's own last ones).
    func delete(room: String) { submit(.write(.delete(room: room))) }

    /// Writes with the next batch, in its transaction.
    func write(_ statement: @escaping @Sendable (SQLiteDatabase) throws(StorageError) -> Void) { submit(.write(.statement(statement))) }

    /// Runs `work` on the writer thread once everything submitted before it is committed.
    package func afterCommits(_ work: @escaping @Sendable () -> Void) { submit(.callback(work)) }

    /// The stored room, or nil; waits for everything submitted before.
    func load(room: String) throws(StorageError) -> StoredRoom? {
        try read { database throws(StorageError) in
            guard var stored = try Self.read(room, from: database) else { return nil }
            try database.prepare("SELECT last_change FROM rooms WHERE name = ?").query(.text(room)) { row in stored.lastChange = row.int(0) }
            // Here, not in `read`: backups of databases older than the table verify without it.
            try database.prepare("SELECT client, seq, version FROM actions WHERE room = ? ORDER BY client, seq").query(.text(room)) { row in
                stored.actions.append((ActionNumber(client: row.text(0), seq: row.int(1)), row.int(2)))
            }
            return stored
        }
    }

    /// Every stored room, without states (the room list, at start); waits for everything
    /// submitted before.
    package func summaries() throws(StorageError) -> [StoredRoomSummary] {
        try read { database throws(StorageError) in
            var rooms: [StoredRoomSummary] = []
            try database.prepare("SELECT name, kind, version, last_change, length(state) FROM rooms").query { row in
                rooms.append(StoredRoomSummary(name: row.text(0), kind: row.text(1), version: row.int(2), lastChange: row.int(3), bytes: row.int(4)))
            }
            return rooms
        } ?? []
    }

    /// Runs `body` on the writer thread once everything submitted before is written, and waits
    /// for its result.
    func read<T>(_ body: @escaping (SQLiteDatabase) throws(StorageError) -> T?) throws(StorageError) -> T? {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T?, StorageError> = .success(nil)
        submit(.read { database in
            if let database { result = Result { () throws(StorageError) in try body(database) } }
            done.signal()
        })
        done.wait()
        return try result.get()
    }

    /// Returns once everything submitted before has been written and its callbacks have run.
    package func waitForWrites() {
        let done = DispatchSemaphore(value: 0)
        submit(.callback { done.signal() })
        done.wait()
    }

    /// Commits what is queued and stops the writer.
    package func close() {
        let done = DispatchSemaphore(value: 0)
        submit(.callback { done.signal() })
        submit(.stop)
        done.wait()
        lock.release()
    }

    private func submit(_ job: Job) {
        let wasEmpty = jobs.withLock { jobs in
            defer { jobs.append(job) }
            return jobs.isEmpty
        }
        if wasEmpty { wake.signal() }
    }

    // MARK: Writer thread

    private func writerLoop() {
        while true {
            wake.wait()
            while true {
                let batch = jobs.withLock { jobs -> [Job] in
                    defer { jobs.removeAll(keepingCapacity: true) }
                    return jobs
                }
                if batch.isEmpty { break }
                if !run(batch) { return }
            }
        }
    }

    /// Writes the batch's version steps and deletions in one transaction, then runs its
    /// callbacks and reads in order. Returns false on `.stop`.
    private func run(_ batch: [Job]) -> Bool {
        let writes = batch.compactMap { if case .write(let write) = $0 { return write } else { return nil } }
        if !writes.isEmpty {
            do {
                try database.withLock { database throws(StorageError) in
                    guard let database else { return }
                    try write(writes, to: database)
                }
            } catch {
                // Nothing that depends on these versions may go out: an ack must mean durable.
                logger.critical("cannot write to \(path): \(error); stopping so no undurable change is acknowledged")
                exit(74)
            }
        }
        for job in batch {
            switch job {
            case .write: break
            case .callback(let work): work()
            case .read(let body): database.withLock { body($0) }
            case .stop:
                database.withLock { $0 = nil }
                return false
            }
        }
        return true
    }

    private func write(_ writes: [Write], to database: SQLiteDatabase) throws(StorageError) {
        try database.transaction { () throws(StorageError) in
            let insertPatch = try database.prepare("INSERT OR REPLACE INTO patches(room, version, frame, stored, provenance, at) VALUES(?, ?, ?, ?, ?, ?)")
            let advance = try database.prepare("UPDATE rooms SET version = ?, epoch = ?, last_change = ? WHERE name = ?")
            let snapshot = try database.prepare("""
                INSERT INTO rooms(name, kind, epoch, version, snapshot_version, state, last_change, stored) VALUES(?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7)
                ON CONFLICT(name) DO UPDATE SET kind = ?2, epoch = ?3, version = ?4, snapshot_version = ?4, state = ?5, last_change = ?6, stored = ?7
                """)
            // Patches up to a history snapshot that is beyond the versions kept (?2), older than
            // the age kept (?3: a patch without a time is old) and not after the room's own
            // snapshot: every kept version still rebuilds from a snapshot, and the room restores.
            let trim = try database.prepare("""
                DELETE FROM patches WHERE room = ?1 AND version <= (
                  SELECT max(version) FROM history_snapshots WHERE room = ?1 AND version <= ?2
                    AND version <= (SELECT snapshot_version FROM rooms WHERE name = ?1)
                    AND version <= coalesce((SELECT max(version) FROM patches WHERE room = ?1 AND coalesce(at, 0) < ?3), -1))
                """)
            let forget = try database.prepare("DELETE FROM patches WHERE room = ?")
            let remove = try database.prepare("DELETE FROM rooms WHERE name = ?")
            let insertAction = try database.prepare("INSERT OR REPLACE INTO actions(room, client, seq, version) VALUES(?, ?, ?, ?)")
            let trimActions = try database.prepare("DELETE FROM actions WHERE room = ? AND client = ? AND seq <= ?")
            let forgetActions = try database.prepare("DELETE FROM actions WHERE room = ?")
            for write in writes {
                switch write {
                case .statement(let statement):
                    try statement(database)
                case .delete(let room):
                    try Self.forgetHistory(room: room, in: database)
                    try forget.run(.text(room))
                    try forgetActions.run(.text(room))
                    try remove.run(.text(room))
                case .commit(let commit):
                    if commit.startsEpoch {
                        try forget.run(.text(commit.room))
                        try forgetActions.run(.text(commit.room))  // their versions were the old epoch's
                    }
                    if let patch = commit.patch {
                        try insertPatch.run(.text(commit.room), .int(patch.version), .blob(patch.frame), commit.storedOperations.map { .blob($0) } ?? .null,
                                            commit.provenance.map { .blob($0.json(digestKey: digestKey).encoded()) } ?? .null,
                                            .int(commit.provenance?.at ?? commit.lastChange))
                    }
                    if !commit.webhooks.isEmpty { try Self.insertOutbox(commit.webhooks, into: database) }
                    if let number = commit.applied {
                        try insertAction.run(.text(commit.room), .text(number.client), .int(number.seq), .int(commit.version))
                        try trimActions.run(.text(commit.room), .text(number.client), .int(number.seq - ActionOutcomes.perClient))
                    }
                    if let state = commit.state {
                        try snapshot.run(.text(commit.room), .text(commit.kind), .text(commit.epoch), .int(commit.version), .blob(state.published),
                                         .int(commit.lastChange), .blob(state.stored))
                        let retention = commit.retention
                        try Self.keepHistorySnapshot(room: commit.room, version: commit.version, state: state.published, stored: state.stored,
                                                     every: retention.snapshotEvery, startsEpoch: commit.startsEpoch, in: database)
                        try trim.run(.text(commit.room), .int(commit.version - (retention.versions ?? historyLimit)),
                                     .int(retention.ageSeconds.map { commit.lastChange - $0 } ?? Int.max))
                        try Self.forgetUnusedHistorySnapshots(room: commit.room, in: database)
                    } else {
                        try advance.run(.int(commit.version), .text(commit.epoch), .int(commit.lastChange), .text(commit.room))
                    }
                }
            }
        }
    }

    /// Whether `table` has `column` (a backup of an older database may lack it).
    static func hasColumn(_ column: String, in table: String, of database: SQLiteDatabase) throws(StorageError) -> Bool {
        var found = false
        try database.prepare("PRAGMA table_info(\(table))").query { row in found = found || row.text(1) == column }
        return found
    }
}
