import Foundation

/// The webhook outbox in the rooms' database: a step's deliveries are inserted in the step's
/// transaction (`Commit.webhooks`); the deliverer's updates go through the writer like every
/// write; reads wait for the writes submitted before them.
extension RoomStore: WebhookOutbox {
    static func createOutbox(in database: SQLiteDatabase) throws(StorageError) {
        try database.execute("""
            CREATE TABLE IF NOT EXISTS webhook_outbox(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, endpoint TEXT NOT NULL, room TEXT NOT NULL, type TEXT NOT NULL,
                msg_id TEXT NOT NULL, body BLOB NOT NULL, created INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt INTEGER NOT NULL, last_error TEXT, dead INTEGER NOT NULL DEFAULT 0);
            CREATE INDEX IF NOT EXISTS webhook_outbox_heads ON webhook_outbox(dead, endpoint, room, seq);
            CREATE TABLE IF NOT EXISTS webhook_errors(endpoint TEXT PRIMARY KEY, error TEXT NOT NULL, at INTEGER NOT NULL);
            """)
    }

    static func insertOutbox(_ deliveries: [WebhookDelivery], into database: SQLiteDatabase, now: Int? = nil) throws(StorageError) {
        let insert = try database.prepare("""
            INSERT INTO webhook_outbox(endpoint, room, type, msg_id, body, created, next_attempt)
            VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?6)
            """)
        let time = now ?? Int(Date().timeIntervalSince1970)
        for delivery in deliveries {
            let event = delivery.event
            try insert.run(.text(delivery.endpoint), .text(event.room), .text(event.type.rawValue), .text(event.id), .blob(event.body), .int(time))
        }
    }

    func add(_ deliveries: [WebhookDelivery], now: Int) {
        guard !deliveries.isEmpty else { return }
        write { database throws(StorageError) in try Self.insertOutbox(deliveries, into: database, now: now) }
    }

    func due(now: Int, limit: Int) -> [WebhookOutboxRow] {
        let rows = try? read { database throws(StorageError) -> [WebhookOutboxRow]? in
            var rows: [WebhookOutboxRow] = []
            // Each (endpoint, room)'s oldest live row, if it is due.
            try database.prepare("""
                SELECT o.seq, o.endpoint, o.room, o.type, o.msg_id, o.body, o.created, o.attempts, o.next_attempt
                FROM webhook_outbox o
                JOIN (SELECT MIN(seq) AS head FROM webhook_outbox WHERE dead = 0 GROUP BY endpoint, room) h ON o.seq = h.head
                WHERE o.next_attempt <= ?1 ORDER BY o.seq LIMIT ?2
                """).query(.int(now), .int(limit)) { row in
                guard let type = WebhookEventType(rawValue: row.text(3)) else { return }
                let event = WebhookEvent(type: type, room: row.text(2), id: row.text(4), body: row.blob(5))
                rows.append(WebhookOutboxRow(seq: row.int(0), delivery: WebhookDelivery(endpoint: row.text(1), event: event),
                                             created: row.int(6), attempts: row.int(7), nextAttempt: row.int(8)))
            }
            return rows
        }
        return (rows ?? nil) ?? []
    }

    func delivered(_ seq: Int) {
        write { database throws(StorageError) in try database.prepare("DELETE FROM webhook_outbox WHERE seq = ?").run(.int(seq)) }
    }

    func retry(_ seq: Int, attempts: Int, at time: Int, error: String, now: Int) {
        write { database throws(StorageError) in
            try database.prepare("UPDATE webhook_outbox SET attempts = ?, next_attempt = ?, last_error = ? WHERE seq = ?")
                .run(.int(attempts), .int(time), .text(error), .int(seq))
            try Self.noteError(seq, error, now, in: database)
        }
    }

    func dead(_ seq: Int, attempts: Int, error: String, now: Int) {
        write { database throws(StorageError) in
            try database.prepare("UPDATE webhook_outbox SET attempts = ?, last_error = ?, dead = 1 WHERE seq = ?").run(.int(attempts), .text(error), .int(seq))
            try Self.noteError(seq, error, now, in: database)
        }
    }

    private static func noteError(_ seq: Int, _ error: String, _ now: Int, in database: SQLiteDatabase) throws(StorageError) {
        try database.prepare("""
            INSERT INTO webhook_errors(endpoint, error, at) SELECT endpoint, ?2, ?3 FROM webhook_outbox WHERE seq = ?1
            ON CONFLICT(endpoint) DO UPDATE SET error = excluded.error, at = excluded.at
            """).run(.int(seq), .text(error), .int(now))
    }

    func status() -> [String: WebhookEndpointStatus] {
        let statuses = try? read { database throws(StorageError) -> [String: WebhookEndpointStatus]? in
            var statuses: [String: WebhookEndpointStatus] = [:]
            try database.prepare("SELECT endpoint, dead, COUNT(*) FROM webhook_outbox GROUP BY endpoint, dead").query { row in
                if row.int(1) == 0 { statuses[row.text(0), default: .init()].pending = row.int(2) } else { statuses[row.text(0), default: .init()].dead = row.int(2) }
            }
            try database.prepare("SELECT endpoint, error, at FROM webhook_errors").query { row in
                statuses[row.text(0), default: .init()].lastError = row.text(1)
                statuses[row.text(0), default: .init()].lastErrorAt = row.int(2)
            }
            return statuses
        }
        return (statuses ?? nil) ?? [:]
    }

    func revive(endpoint: String, now: Int) -> Int {
        let count = try? read { database throws(StorageError) -> Int? in
            try database.prepare("UPDATE webhook_outbox SET dead = 0, attempts = 0, next_attempt = ? WHERE endpoint = ? AND dead = 1")
                .run(.int(now), .text(endpoint))
            return Int(try database.scalar("SELECT changes()") ?? "0")
        }
        return (count ?? nil) ?? 0
    }
}
