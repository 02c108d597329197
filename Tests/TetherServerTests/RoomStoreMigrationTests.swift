import Foundation
import Logging
import Testing
@testable import TetherServer
import TetherTestSupport

/// A database written before rooms recorded their last change: backups of it still verify (so
/// `tetherd restore` takes them), and the daemon adds the column when it opens it, counting its
/// rooms as changed then (so none expires at once after an upgrade).
@Suite("Stored rooms: the last_change column")
struct RoomStoreMigrationTests {
    /// A database in the layout of the previous release, holding one room at version 3.
    static func oldDatabase(in directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + RoomStore.databaseFileName
        let database = try SQLiteDatabase(path: path)
        try database.execute("""
            CREATE TABLE rooms(
                name TEXT PRIMARY KEY, kind TEXT NOT NULL, epoch TEXT NOT NULL,
                version INTEGER NOT NULL, snapshot_version INTEGER NOT NULL, state BLOB NOT NULL);
            CREATE TABLE patches(
                room TEXT NOT NULL, version INTEGER NOT NULL, frame BLOB NOT NULL,
                PRIMARY KEY(room, version)) WITHOUT ROWID;
            INSERT INTO rooms VALUES('counter:old', 'counter', 'e1', 3, 3, CAST('{"count":3}' AS BLOB));
            """)
        return path
    }

    @Test func anOlderDatabaseVerifiesAndGetsTheColumnWhenOpened() throws {
        let directory = Daemon.temporaryDirectory()
        let path = try Self.oldDatabase(in: directory)
        let summary = try DatabaseBackup.verify(path)
        #expect(summary.rooms == [.init(name: "counter:old", epoch: "e1", version: 3)], "a backup of an older daemon still restores")

        let before = Int(Date().timeIntervalSince1970)
        let store = try RoomStore(directory: directory, durability: .batch, historyLimit: 10, logger: Logger(label: "test"))
        defer { store.close() }
        let rooms = try store.summaries()
        let after = Int(Date().timeIntervalSince1970)
        #expect(rooms.map(\.name) == ["counter:old"])
        let room = try #require(rooms.first)
        #expect(room.kind == "counter" && room.version == 3 && room.bytes == #"{"count":3}"#.utf8.count)
        #expect((before...after).contains(room.lastChange), "counted as changed when the column was added")
        #expect(try store.load(room: "counter:old")?.lastChange == room.lastChange)
        #expect(try DatabaseBackup.verify(path).rooms.count == 1, "and the new layout verifies too")
    }
}
