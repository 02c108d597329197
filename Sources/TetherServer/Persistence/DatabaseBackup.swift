import Foundation

/// `tetherd backup` and `tetherd restore`: a consistent copy of a data directory's database
/// while the daemon runs and writes, and a checked way back.
///
/// A backup does not take the data directory's lock (the running daemon holds it): it opens
/// the database read-only from a second connection and copies it with SQLite's online backup
/// API in one step, which reads one snapshot. Everything committed before that read began is
/// in the copy — with the default durabilities every acknowledged action, since an ack waits
/// for its commit (`durability none` promises nothing). The copy is a single self-contained
/// file (no write-ahead log), written beside the target and renamed into place when complete.
public enum DatabaseBackup {
    /// What a backup or restore holds.
    public struct Summary: Sendable, CustomStringConvertible {
        public struct Room: Sendable, Equatable {
            public var name: String
            public var epoch: String
            public var version: Int
        }
        public var rooms: [Room]
        public var bytes: Int

        public var description: String {
            let shown = rooms.prefix(5).map { "\($0.name)@\($0.version)" }.joined(separator: ", ")
            return "\(rooms.count) room\(rooms.count == 1 ? "" : "s") (\(shown)\(rooms.count > 5 ? ", ..." : "")), \(bytes) bytes"
        }
    }

    public enum Failure: Error, CustomStringConvertible {
        case noDatabase(String)
        case exists(String)
        case inUse(String)
        case storage(String)

        public var description: String {
            switch self {
            case .noDatabase(let what), .exists(let what), .inUse(let what), .storage(let what): return what
            }
        }

        /// sysexits: 66 no input, 73 can't create, 69 unavailable, 74 I/O error.
        public var exitCode: Int32 {
            switch self {
            case .noDatabase: return 66
            case .exists: return 73
            case .inUse: return 69
            case .storage: return 74
            }
        }

        /// What each status means, for `--help`.
        public static let exitStatusHelp = "0 done; 64 bad option; 66 no database to back up, or no backup file; 69 a daemon holds the data "
            + "directory; 73 the data directory cannot be created, or it already has a database and --replace was not given; 74 storage I/O error."
    }

    /// Copies the database of `dataDirectory` to `file` (replacing it), daemon running or not.
    public static func backup(dataDirectory: String, to file: String) throws(Failure) -> Summary {
        let source = (dataDirectory as NSString).appendingPathComponent(RoomStore.databaseFileName)
        guard FileManager.default.fileExists(atPath: source) else { throw .noDatabase("no database in \(dataDirectory) (\(source) is missing)") }
        let partial = file + ".partial"
        removeDatabaseFiles(partial)
        do {
            let from = try SQLiteDatabase(path: source, readOnly: true)
            // Every room's state: created readable by its owner only (SQLite keeps the mode, and
            // gives its journal the same), never readable by others even for a moment.
            close(open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600))
            try copy(from, toNew: partial)
            let summary = try verify(partial)
            try rename(partial, to: file)
            return summary
        } catch {
            removeDatabaseFiles(partial)
            throw .storage("backup of \(source) failed: \(error)")
        }
    }

    /// Puts the backup `file` in place as the database of `dataDirectory`, after checking that
    /// every room in it loads (state, epoch, version, patches). The directory must not be in
    /// use by a daemon (its lock is taken meanwhile). A database already there is refused
    /// unless `replace`, which moves it aside as `tether.sqlite.replaced-TIME` (with its
    /// write-ahead log). A daemon started on the directory then serves every room at the
    /// backup's epoch and version, so resuming clients get patches.
    public static func restore(from file: String, into dataDirectory: String, replace: Bool) throws(Failure) -> Summary {
        guard FileManager.default.fileExists(atPath: file) else { throw .noDatabase("no backup at \(file)") }
        if let failure = RoomStore.makeDirectory(dataDirectory) { throw .exists("cannot create \(dataDirectory): \(failure)") }
        let lock: DataDirectoryLock
        do {
            lock = try DataDirectoryLock(directory: dataDirectory)
        } catch {
            throw .inUse("\(error.description); stop the daemon before restoring")
        }
        defer { lock.release() }
        let target = (dataDirectory as NSString).appendingPathComponent(RoomStore.databaseFileName)
        if FileManager.default.fileExists(atPath: target), !replace {
            throw .exists("\(target) exists; give --replace to move it aside and restore over it")
        }
        let incoming = target + ".restoring"
        removeDatabaseFiles(incoming)
        do {
            let summary = try verify(file)
            try copy(try SQLiteDatabase(path: file, readOnly: true), toNew: incoming)
            if FileManager.default.fileExists(atPath: target) {
                let aside = target + ".replaced-" + Self.timestamp()
                for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: target + suffix) {
                    try rename(target + suffix, to: aside + suffix)
                }
            }
            try rename(incoming, to: target)
            giveToOwner(of: dataDirectory, target)
            return summary
        } catch {
            removeDatabaseFiles(incoming)
            throw .storage("restore from \(file) failed: \(error)")
        }
    }

    /// Reads every room of the database at `path` (replaying patches onto snapshots, as the
    /// daemon does when a room is first joined) and checks SQLite's integrity.
    public static func verify(_ path: String) throws(StorageError) -> Summary {
        let database = try SQLiteDatabase(path: path, readOnly: true)
        let integrity = try database.scalar("PRAGMA integrity_check")
        guard integrity == "ok" else { throw .corrupt("integrity check: \(integrity ?? "no answer")") }
        var names: [String] = []
        do {
            try database.prepare("SELECT name FROM rooms ORDER BY name").query { row in names.append(row.text(0)) }
        } catch {
            throw .corrupt("\(path) is not a tetherd database (\(error))")
        }
        var rooms: [Summary.Room] = []
        for name in names {
            guard let room = try RoomStore.read(name, from: database) else { continue }
            rooms.append(Summary.Room(name: name, epoch: room.epoch, version: room.version))
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return Summary(rooms: rooms, bytes: bytes)
    }

    /// Copies into a new single-file database at `path`, flushed to disk.
    private static func copy(_ source: SQLiteDatabase, toNew path: String) throws(StorageError) {
        let copy = try SQLiteDatabase(path: path)
        try copy.copy(from: source)
        _ = try copy.scalar("PRAGMA journal_mode=DELETE")
        try copy.execute("PRAGMA synchronous=FULL; VACUUM")
    }

    private static func rename(_ from: String, to: String) throws(StorageError) {
        guard Foundation.rename(from, to) == 0 else { throw .cannotOpen(to, "rename from \(from): \(String(cString: strerror(errno)))") }
    }

    private static func removeDatabaseFiles(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
    }

    /// Run as root for a daemon that runs as its own user: the restored file is that user's.
    private static func giveToOwner(of directory: String, _ path: String) {
        var info = stat()
        guard geteuid() == 0, stat(directory, &info) == 0 else { return }
        chown(path, info.st_uid, info.st_gid)
    }

    private static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date())
    }
}
