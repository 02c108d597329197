import Foundation
import Logging
import Synchronization
import TetherProtocol
import TetherJSON

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
    var patches: [PatchFrame]
}

/// Keeps shared rooms in SQLite (WAL mode), in one database file in the data directory.
///
/// One writer thread owns the connection. Rooms submit jobs — commits of version steps and
/// callbacks — and the writer runs them in submission order, committing every queued step in one
/// transaction ("group commit") before running the callbacks that follow them. A room routes
/// everything it sends through here, so no client ever sees a version that is not yet durable.
final class RoomStore: Sendable {
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

    private enum Job: @unchecked Sendable {
        case commit(Commit)
        case callback(() -> Void)
        case load(String, (Result<StoredRoom?, StorageError>) -> Void)
        case stop
    }

    struct Commit: Sendable {
        let room: String
        let kind: String
        let epoch: String
        let patch: PatchFrame?
        let version: Int
        /// The encoded state at `version`, when a snapshot is due (or the room is new or stopping).
        let state: [UInt8]?
        /// A new epoch: patches of the previous one are deleted.
        var startsEpoch = false
    }

    /// Takes the data directory's lock, then opens (or creates) the database.
    init(directory: String, durability: Durability, historyLimit: Int, logger: Logger) throws(StartupError) {
        self.durability = durability
        self.historyLimit = historyLimit
        self.logger = logger
        if let failure = Self.makeDirectory(directory) { throw .dataDirectory(directory, failure) }
        lock = try DataDirectoryLock(directory: directory)
        path = (directory as NSString).appendingPathComponent(Self.databaseFileName)
        do {
            self.database = Mutex(try Self.open(path, durability: durability))
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
                version INTEGER NOT NULL, snapshot_version INTEGER NOT NULL, state BLOB NOT NULL);
            CREATE TABLE IF NOT EXISTS patches(
                room TEXT NOT NULL, version INTEGER NOT NULL, frame BLOB NOT NULL,
                PRIMARY KEY(room, version)) WITHOUT ROWID;
            """)
        return database
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

    func commit(_ commit: Commit) { submit(.commit(commit)) }

    /// Runs `work` on the writer thread once everything submitted before it is committed.
    func afterCommits(_ work: @escaping @Sendable () -> Void) { submit(.callback(work)) }

    /// The stored room, or nil; waits for everything submitted before.
    func load(room: String) throws(StorageError) -> StoredRoom? {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<StoredRoom?, StorageError>>(.success(nil))
        submit(.load(room) { loaded in
            result.withLock { $0 = loaded }
            done.signal()
        })
        done.wait()
        return try result.withLock { $0 }.get()
    }

    /// Commits what is queued and stops the writer.
    func close() {
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

    /// Commits the batch's version steps in one transaction, then runs its callbacks and loads
    /// in order. Returns false on `.stop`.
    private func run(_ batch: [Job]) -> Bool {
        let commits = batch.compactMap { if case .commit(let commit) = $0 { return commit } else { return nil } }
        if !commits.isEmpty {
            do {
                try database.withLock { database throws(StorageError) in
                    guard let database else { return }
                    try write(commits, to: database)
                }
            } catch {
                // Nothing that depends on these versions may go out: an ack must mean durable.
                logger.critical("cannot write to \(path): \(error); stopping so no undurable change is acknowledged")
                exit(74)
            }
        }
        for job in batch {
            switch job {
            case .commit: break
            case .callback(let work): work()
            case .load(let room, let reply):
                reply(Result { () throws(StorageError) -> StoredRoom? in
                    try database.withLock { database throws(StorageError) -> StoredRoom? in
                        guard let database else { return nil }
                        return try Self.read(room, from: database)
                    }
                })
            case .stop:
                database.withLock { $0 = nil }
                return false
            }
        }
        return true
    }

    private func write(_ commits: [Commit], to database: SQLiteDatabase) throws(StorageError) {
        try database.transaction { () throws(StorageError) in
            let insertPatch = try database.prepare("INSERT OR REPLACE INTO patches(room, version, frame) VALUES(?, ?, ?)")
            let advance = try database.prepare("UPDATE rooms SET version = ?, epoch = ? WHERE name = ?")
            let snapshot = try database.prepare("""
                INSERT INTO rooms(name, kind, epoch, version, snapshot_version, state) VALUES(?1, ?2, ?3, ?4, ?4, ?5)
                ON CONFLICT(name) DO UPDATE SET kind = ?2, epoch = ?3, version = ?4, snapshot_version = ?4, state = ?5
                """)
            let trim = try database.prepare("""
                DELETE FROM patches WHERE room = ?1 AND version <= ?2
                  AND version <= (SELECT snapshot_version FROM rooms WHERE name = ?1)
                """)
            let forget = try database.prepare("DELETE FROM patches WHERE room = ?")
            for commit in commits {
                if commit.startsEpoch { try forget.run(.text(commit.room)) }
                if let patch = commit.patch {
                    try insertPatch.run(.text(commit.room), .int(patch.version), .blob(patch.frame))
                }
                if let state = commit.state {
                    try snapshot.run(.text(commit.room), .text(commit.kind), .text(commit.epoch), .int(commit.version), .blob(state))
                    try trim.run(.text(commit.room), .int(commit.version - historyLimit))
                } else {
                    try advance.run(.int(commit.version), .text(commit.epoch), .text(commit.room))
                }
            }
        }
    }

    /// A room as stored, its patches replayed onto its snapshot; nil when there is none.
    static func read(_ name: String, from database: SQLiteDatabase) throws(StorageError) -> StoredRoom? {
        var stored: StoredRoom?
        var snapshotVersion = 0
        try database.prepare("SELECT epoch, version, snapshot_version, state FROM rooms WHERE name = ?").query(.text(name)) { row throws(StorageError) in
            let state: JSON
            do { state = try JSONParser().parse(row.blob(3)) } catch { throw .corrupt("state of \(name): \(error)") }
            snapshotVersion = row.int(2)
            stored = StoredRoom(epoch: row.text(0), version: row.int(1), state: state, patches: [])
        }
        guard var room = stored else { return nil }
        // Replay the patches after the snapshot; keep the newest contiguous run as history.
        var state = room.state
        var reached = snapshotVersion
        var patches: [PatchFrame] = []
        try database.prepare("SELECT frame FROM patches WHERE room = ? ORDER BY version").query(.text(name)) { row throws(StorageError) in
            guard case .patch(_, let epoch, let from, let version, let operations)? = try? ServerMessage.decode(row.blob(0)) else {
                throw .corrupt("a stored patch of \(name) does not decode")
            }
            if let last = patches.last, last.version != from { patches.removeAll() }
            patches.append(PatchFrame(room: name, epoch: epoch, from: from, version: version, operations: operations))
            guard version > snapshotVersion else { return }
            guard from == reached else { throw .corrupt("\(name): stored patches skip from \(reached) to \(from)") }
            do { try state.apply(operations) } catch { throw .corrupt("\(name): stored patch \(from)->\(version) does not apply: \(error)") }
            reached = version
        }
        guard reached == room.version else { throw .corrupt("\(name): stored at version \(room.version), patches reach \(reached)") }
        room.state = state
        room.patches = patches.filter { $0.epoch == room.epoch }
        return room
    }
}
