import CSQLite

/// A small wrapper over one SQLite connection: open, execute, prepared statements. Not
/// thread-safe: one owner thread (the room store's writer) uses it.
final class SQLiteDatabase {
    private var handle: OpaquePointer?

    /// Opens (creating it if missing), or with `readOnly` opens an existing database without
    /// writing to it.
    init(path: String, readOnly: Bool = false) throws(StorageError) {
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            handle = nil
            throw .cannotOpen(path, message)
        }
        sqlite3_busy_timeout(handle, 5_000)
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws(StorageError) {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? lastError
            sqlite3_free(error)
            throw .sql(sql, message)
        }
    }

    func prepare(_ sql: String) throws(StorageError) -> Statement {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK, let statement else {
            throw .sql(sql, lastError)
        }
        return Statement(statement, database: self)
    }

    /// Runs `body` in one transaction: committed if it returns, rolled back if it throws.
    func transaction(_ body: () throws(StorageError) -> Void) throws(StorageError) {
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Copies `source` into this database with SQLite's online backup API, in one step: the
    /// copy is one consistent snapshot (a read transaction on `source`), and in WAL mode the
    /// source's writers keep writing meanwhile.
    func copy(from source: SQLiteDatabase) throws(StorageError) {
        guard let backup = sqlite3_backup_init(handle, "main", source.handle, "main") else { throw .sql("backup", lastError) }
        var status = sqlite3_backup_step(backup, -1)
        var attempts = 0
        while (status == SQLITE_BUSY || status == SQLITE_LOCKED) && attempts < 100 {
            attempts += 1
            sqlite3_sleep(50)
            status = sqlite3_backup_step(backup, -1)
        }
        let finished = sqlite3_backup_finish(backup)
        guard status == SQLITE_DONE, finished == SQLITE_OK else { throw .sql("backup", source.lastError + " / " + lastError) }
    }

    /// The first column of the first row of `sql`, as text (PRAGMAs, counts).
    func scalar(_ sql: String) throws(StorageError) -> String? {
        var result: String?
        try prepare(sql).query { row in if result == nil { result = row.text(0) } }
        return result
    }

    var lastError: String { handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed" }

    final class Statement {
        private let statement: OpaquePointer
        private unowned let database: SQLiteDatabase

        init(_ statement: OpaquePointer, database: SQLiteDatabase) {
            self.statement = statement
            self.database = database
        }

        deinit { sqlite3_finalize(statement) }

        enum Value {
            case int(Int)
            case text(String)
            case blob([UInt8])
            case null
        }

        /// Binds `values` to the parameters in order, runs to completion, and resets.
        func run(_ values: Value...) throws(StorageError) {
            try bind(values)
            defer { sqlite3_reset(statement) }
            let status = sqlite3_step(statement)
            guard status == SQLITE_DONE || status == SQLITE_ROW else { throw .sql("step", database.lastError) }
        }

        /// Binds `values`, then calls `row` for each result row.
        func query(_ values: Value..., row: (Row) throws(StorageError) -> Void) throws(StorageError) {
            try bind(values)
            defer { sqlite3_reset(statement) }
            while true {
                let status = sqlite3_step(statement)
                if status == SQLITE_DONE { return }
                guard status == SQLITE_ROW else { throw .sql("step", database.lastError) }
                try row(Row(statement: statement))
            }
        }

        private func bind(_ values: [Value]) throws(StorageError) {
            sqlite3_clear_bindings(statement)
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                let status: Int32
                switch value {
                case .int(let int): status = sqlite3_bind_int64(statement, index, Int64(int))
                case .text(let text): status = sqlite3_bind_text(statement, index, text, -1, tether_sqlite_transient())
                case .blob(let bytes):
                    status = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), tether_sqlite_transient()) }
                case .null: status = sqlite3_bind_null(statement, index)
                }
                guard status == SQLITE_OK else { throw .sql("bind", database.lastError) }
            }
        }
    }

    struct Row {
        let statement: OpaquePointer

        func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
        func text(_ column: Int32) -> String {
            guard let text = sqlite3_column_text(statement, column) else { return "" }
            return String(cString: text)
        }
        /// The column's bytes; empty for NULL.
        func blob(_ column: Int32) -> [UInt8] {
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: bytes, count: count))
        }
    }
}

public enum StorageError: Error, CustomStringConvertible {
    case cannotOpen(String, String)
    case sql(String, String)
    case corrupt(String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let message): return "cannot open database \(path): \(message)"
        case .sql(let sql, let message): return "SQLite error in \(sql.prefix(60)): \(message)"
        case .corrupt(let what): return "stored data is corrupt: \(what)"
        }
    }
}
