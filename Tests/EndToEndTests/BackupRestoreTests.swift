import Foundation
import Synchronization
import Testing
import TetherJSON
import TetherTestSupport

/// `tetherd backup` of a live database under load, `tetherd restore`, and a daemon on the
/// restored data: every action acknowledged before the backup started is there, with the
/// rooms' epochs and versions, so resuming clients get patches.
@Suite("End to end: backup and restore", .serialized)
struct BackupRestoreTests {
    /// One client incrementing its own counter room as fast as acks come back.
    final class Incrementer: @unchecked Sendable {
        let room: String
        let socket: RawWebSocket
        let epoch: String
        /// The highest acknowledged version so far.
        let acked = Atomic<Int>(0)
        private let stopped = Atomic<Bool>(false)
        private let finished = DispatchSemaphore(value: 0)
        private(set) var failure: String?

        init(port: Int, room: String) throws {
            self.room = room
            socket = try RawWebSocket(port: port)
            _ = try socket.receiveJSON()
            try socket.sendText(#"{"type":"join","room":"\#(room)","id":1}"#)
            let snapshot = try socket.receiveJSON(until: { $0["type"] == "snapshot" })
            epoch = snapshot["epoch"]?.stringValue ?? ""
            _ = try socket.receiveJSON(until: { $0["type"] == "ack" })
        }

        func start() {
            Thread.detachNewThread { [self] in
                var id = 2
                while !stopped.load(ordering: .relaxed) {
                    do {
                        try socket.sendText(#"{"type":"action","room":"\#(room)","name":"increment","id":\#(id)}"#)
                        let ack = try socket.receiveJSON(until: { $0["type"] == "ack" || $0["type"] == "error" })
                        guard ack["type"] == "ack", let version = ack["version"]?.intValue else { failure = "\(ack)"; break }
                        acked.store(version, ordering: .relaxed)
                    } catch {
                        failure = "\(error)"
                        break
                    }
                    id += 1
                }
                finished.signal()
            }
        }

        func stop() {
            stopped.store(true, ordering: .relaxed)
            finished.wait()
        }
    }

    static func tetherd(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try Daemon.runToExit(arguments, timeout: .seconds(60))
    }

    @Test func aBackupUnderLoadHoldsEveryEarlierAckAndRestoresResumably() throws {
        // Local acks come back faster than the default 1,000 actions/s a connection may send.
        let daemon = try Daemon(arguments: ["--max-actions-per-second", "100000"])
        defer { daemon.stop() }
        let incrementers = try (1...3).map { try Incrementer(port: daemon.port, room: "counter:backup-\($0)") }
        incrementers.forEach { $0.start() }
        Thread.sleep(forTimeInterval: 0.5)

        // Everything acknowledged before the backup starts must be in it.
        let ackedBefore = incrementers.map { $0.acked.load(ordering: .relaxed) }
        let file = daemon.dataDirectory + "-backup.sqlite"
        defer { unlink(file) }
        let backup = try Self.tetherd(["backup", "--data", daemon.dataDirectory, file])
        let ackedAfter = incrementers.map { $0.acked.load(ordering: .relaxed) }
        Thread.sleep(forTimeInterval: 0.3)
        incrementers.forEach { $0.stop() }
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.contains("3 rooms"), "\(backup.stdout)")
        #expect(incrementers.allSatisfy { $0.failure == nil }, "\(incrementers.map(\.failure))")
        #expect(ackedBefore.allSatisfy { $0 > 10 }, "the load was running: \(ackedBefore)")
        #expect(zip(ackedBefore, ackedAfter).allSatisfy { $0 < $1 }, "acks kept coming while the backup ran: \(ackedBefore) \(ackedAfter)")
        #expect(daemon.isRunning, "a backup does not disturb the daemon")

        // Restore into a fresh data directory; restoring over it again needs --replace.
        let restored = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: restored) }
        let restore = try Self.tetherd(["restore", "--data", restored, file])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(try Self.tetherd(["restore", "--data", restored, file]).status == 73)
        #expect(try Self.tetherd(["restore", "--data", daemon.dataDirectory, "--replace", file]).status == 69,
                "a data directory in use by a daemon is refused")

        let second = try Daemon(dataDirectory: restored)
        defer { second.stop() }
        for (index, incrementer) in incrementers.enumerated() {
            let socket = try RawWebSocket(port: second.port)
            _ = try socket.receiveJSON()
            try socket.sendText(#"{"type":"join","room":"\#(incrementer.room)","id":1}"#)
            let snapshot = try socket.receiveJSON(until: { $0["type"] == "snapshot" })
            let version = snapshot["version"]?.intValue ?? -1
            #expect(snapshot["epoch"]?.stringValue == incrementer.epoch, "the room keeps its epoch")
            #expect(version >= ackedBefore[index], "every action acked before the backup is in it (\(version) >= \(ackedBefore[index]))")
            #expect(version <= incrementer.acked.load(ordering: .relaxed))
            #expect(snapshot["state"]?["count"]?.intValue == version, "one increment per version")

            // A client that saw an earlier version resumes with patches.
            let resumer = try RawWebSocket(port: second.port)
            _ = try resumer.receiveJSON()
            try resumer.sendText(#"{"type":"join","room":"\#(incrementer.room)","id":2,"since":{"epoch":"\#(incrementer.epoch)","version":\#(version - 3)}}"#)
            let first = try resumer.receiveJSON(until: { $0["type"] == "patch" || $0["type"] == "snapshot" })
            #expect(first["type"] == "patch" && first["from"]?.intValue == version - 3, "resume gets patches: \(first)")
        }
        print("backup figures: acked before the backup \(ackedBefore), after \(ackedAfter), backup \(backup.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
    }

    @Test func backupOfAMissingDatabaseAndRestoreOfGarbageFailClearly() throws {
        let empty = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let missing = try Self.tetherd(["backup", "--data", empty, empty + "/out.sqlite"])
        #expect(missing.status == 66 && missing.stderr.contains("no database"), "\(missing.stderr)")
        let garbage = empty + "/garbage.sqlite"
        try "not a database".write(toFile: garbage, atomically: true, encoding: .utf8)
        let restore = try Self.tetherd(["restore", "--data", empty + "/data", garbage])
        #expect(restore.status == 74, "\(restore.stderr)")
        #expect(restore.stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: empty + "/data/tether.sqlite"))
    }

    /// A backup holds every room's state: only its owner may read it. Restoring over a database
    /// without --replace exits with the status the help gives for it.
    @Test func backupsAreTheOwnersAloneAndRestoreSaysWhatItsStatusMeans() throws {
        let daemon = try Daemon()
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.sendText(#"{"type":"action","room":"counter","name":"increment","id":1}"#)
        _ = try socket.receiveJSON(until: { $0["type"] == "ack" })
        daemon.stop()
        let file = daemon.dataDirectory + "-backup.sqlite"
        defer { unlink(file) }
        #expect(try Self.tetherd(["backup", "--data", daemon.dataDirectory, file]).status == 0)
        let mode = try #require(FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        #expect(mode == 0o600, "mode \(String(mode, radix: 8))")

        let refused = try Self.tetherd(["restore", "--data", daemon.dataDirectory, file])
        #expect(refused.status == 73 && refused.stderr.contains("--replace"), "\(refused.stderr)")
        for help in [try Self.tetherd(["restore", "--help"]).stdout, try Self.tetherd(["--help"]).stdout] {
            let text = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(text.contains("73 the data directory cannot be created, or it already has a database and --replace was not given"), "\(help)")
        }
    }
}
