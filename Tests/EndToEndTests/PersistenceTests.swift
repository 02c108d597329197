import Foundation
import Testing
import TetherClient
import TetherProtocol
import TetherJSON
import TetherTestSupport

/// Durable rooms: a restart, even after `kill -9`, continues every shared room with the same
/// epoch and version, and a client resuming with `since` gets patches, not a snapshot.
@Suite("End to end: durable rooms", .serialized)
@MainActor
struct PersistenceTests {
    @Test(arguments: ["strict", "batch"])
    func killNineLosesNothingAcknowledged(durability: String) async throws {
        let first = try Daemon(arguments: ["--durability", durability])
        let client = try await connectedClient(first, reconnect: false)
        for i in 0..<150 {  // past a snapshot interval, so restore is snapshot + replay
            _ = try await client.send("add", to: "todo:durable", args: ["title": .string("item \(i)")])
        }
        for _ in 0..<7 { _ = try await client.send("increment", to: "counter") }
        _ = try await client.send("setEmail", to: "login", args: ["value": "me@example.com"])
        let todo = client.room("todo:durable")
        try await eventually { todo.isSynced }
        let (epoch, version, state) = (try #require(todo.epoch), try #require(todo.version), todo.state)
        await client.close()
        first.kill9()

        let second = try Daemon(arguments: ["--durability", durability], dataDirectory: first.dataDirectory)
        defer { second.stop() }
        let socket = try RawWebSocket(port: second.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "todo:durable"])
        let snapshot = try socket.receiveJSON()
        #expect(snapshot["epoch"] == .string(epoch))
        #expect(snapshot["version"] == .int(version))
        #expect(snapshot["state"] == state)

        try socket.send(json: ["type": "join", "room": "counter", "since": ["epoch": "none", "version": 0]])
        #expect(try socket.receiveJSON()["state"] == ["count": 7])

        // Resuming from an earlier version of the same epoch is served from the stored history.
        try socket.send(json: ["type": "join", "room": "todo:durable", "since": ["epoch": .string(epoch), "version": .int(version - 5)]])
        let resumed = try socket.receiveJSON()
        #expect(resumed["type"] == "patch")
        #expect(resumed["from"] == .int(version - 5))

        // Per-session rooms are not persisted.
        try socket.send(json: ["type": "join", "room": "login"])
        #expect(try socket.receiveJSON()["state"]?["email"] == "")

        // New versions continue the same history.
        try socket.send(json: ["type": "action", "room": "todo:durable", "name": "add", "args": ["title": "after restart"], "id": 1])
        let patch = try socket.receiveJSON(until: { $0["type"] == "patch" && $0["room"] == "todo:durable" })
        #expect(patch["from"] == .int(version) && patch["version"] == .int(version + 1) && patch["epoch"] == .string(epoch))
    }

    /// The vote's open ballots are its stored state: after `kill -9` during an open vote the
    /// restarted daemon knows who chose what, so a voter sees their own choice and changing it
    /// moves their vote. (Stored state replays from the steps after the snapshot, as the document.)
    @Test func killNineDuringAnOpenVoteForgetsNoChoice() throws {
        let first = try Daemon(arguments: ["--auth-secret", "s3cret"])
        let ana = try PerViewerTests.Voter(port: first.port, room: "vote", token: try PerViewerTests.token("ana"))
        let bo = try PerViewerTests.Voter(port: first.port, room: "vote", token: try PerViewerTests.token("bo"))
        try ana.act("vote", ["option": "pizza"])
        try bo.act("vote", ["option": "salad"])
        first.kill9()

        let second = try Daemon(arguments: ["--auth-secret", "s3cret"], dataDirectory: first.dataDirectory)
        defer { second.stop() }
        let anaAgain = try PerViewerTests.Voter(port: second.port, room: "vote", token: try PerViewerTests.token("ana"))
        #expect(anaAgain.state["mine"] == "pizza", "her choice came back: \(anaAgain.state)")
        try anaAgain.act("vote", ["option": "salad"])
        try anaAgain.follow(timeout: .seconds(5)) { $0["mine"] == "salad" }
        #expect(anaAgain.state["totals"] == ["pizza": 0, "noodles": 0, "salad": 2], "her vote moved, not doubled: \(anaAgain.state)")
    }

    /// Two daemons on one directory would both acknowledge versions of the same rooms, and one
    /// history would silently replace the other's. The directory is locked for a daemon's life.
    @Test func aSecondDaemonOnTheSameDirectoryExitsAtOnce() async throws {
        let first = try Daemon()
        defer { first.stop() }
        let client = try await connectedClient(first, reconnect: false)
        _ = try await client.send("increment", to: "counter", args: ["by": 1000])

        let second = try Daemon.runToExit(["--port", "0", "--data", first.dataDirectory])
        #expect(second.status == 69)
        let lines = second.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line, got: \(second.stderr)")
        #expect(second.stderr.contains(first.dataDirectory) && second.stderr.contains("pid \(first.pid)"))
        #expect(!second.stdout.contains("listening"))

        // The first keeps serving.
        #expect(try await client.send("increment", to: "counter") == 2)
        await client.close()

        // kill -9 releases the lock with the process: a new daemon starts on the directory.
        first.kill9()
        let third = try Daemon(dataDirectory: first.dataDirectory)
        defer { third.stop() }
        let socket = try RawWebSocket(port: third.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "counter"])
        #expect(try socket.receiveJSON()["state"] == ["count": 1001])
    }

    @Test func memoryOnlyStartsANewEpochAfterRestart() async throws {
        let first = try Daemon(arguments: ["--memory-only"])
        let socket = try RawWebSocket(port: first.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "counter"])
        let epoch = try socket.receiveJSON()["epoch"]
        first.stop()
        let second = try Daemon(arguments: ["--memory-only"], dataDirectory: first.dataDirectory)
        defer { second.stop() }
        let again = try RawWebSocket(port: second.port)
        _ = try again.receiveJSON()
        try again.send(json: ["type": "join", "room": "counter"])
        #expect(try again.receiveJSON()["epoch"] != epoch)
    }

    @Test func idleRoomsLeaveMemoryButKeepTheirHistory() async throws {
        let daemon = try Daemon(arguments: ["--idle-room-seconds", "1"])
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "counter:idle"])
        let epoch = try socket.receiveJSON()["epoch"]
        try socket.send(json: ["type": "action", "room": "counter:idle", "name": "increment", "id": 1])
        _ = try socket.receiveJSON(until: { $0["type"] == "ack" })
        try socket.send(json: ["type": "leave", "room": "counter:idle"])
        try await eventually("the idle room is dropped", timeout: .seconds(10)) {
            (try? daemon.httpGET("/metrics").body.contains("tether_rooms 0.0")) == true
        }
        try socket.send(json: ["type": "join", "room": "counter:idle"])
        let snapshot = try socket.receiveJSON()
        #expect(snapshot["epoch"] == epoch && snapshot["version"] == 1 && snapshot["state"] == ["count": 1])
    }
    /// A room that wakes from storage ticks its timers before its first snapshot: the clock's
    /// snapshot shows the time now, not the time it was stored at.
    @Test func aRoomWakingFromStorageIsCurrentInItsFirstSnapshot() async throws {
        let daemon = try Daemon(arguments: ["--idle-room-seconds", "1"])
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "clock"])
        let stored = try #require(try socket.receiveJSON()["state"]?["time"]?.stringValue)
        try socket.send(json: ["type": "leave", "room": "clock"])
        try await eventually("the idle room is dropped", timeout: .seconds(10)) {
            (try? daemon.httpGET("/metrics").body.contains("tether_rooms 0.0")) == true
        }
        // The stored time is at least two seconds old now (the clock shows whole seconds).
        try await Task.sleep(for: .seconds(2))
        let before = Self.wallClock()
        try socket.send(json: ["type": "join", "room": "clock"])
        let woke = try #require(try socket.receiveJSON(until: { $0["type"] == "snapshot" })["state"]?["time"]?.stringValue)
        let after = Self.wallClock()
        #expect(woke != stored, "the snapshot still shows the stored time \(stored)")
        #expect(woke >= before && woke <= after || before > after, "snapshot \(woke), wall clock \(before)...\(after)")
    }

    /// HH:mm:ss in local time, as the clock demo shows it.
    static func wallClock() -> String {
        var seconds = time(nil)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return String(format: "%02d:%02d:%02d", parts.tm_hour, parts.tm_min, parts.tm_sec)
    }
}
