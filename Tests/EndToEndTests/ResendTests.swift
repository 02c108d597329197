import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport

/// An action stored by the daemon whose ack never left (the daemon withholds acks, then is
/// killed with SIGKILL): after the restart the client sends it again under its number, and gets
/// the original ack, from the stored record, without the action running twice.
@Suite("End to end: an action resent after kill -9 runs once", .serialized, .timeLimit(.minutes(2)))
@MainActor
struct ResendTests {
    @Test func anActionStoredButUnacknowledgedBeforeAKillIsAnsweredWithTheOriginalAck() async throws {
        let port = try freePort()
        let data = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        var daemon = try Daemon(port: port, dataDirectory: data, environment: ["TETHERD_TEST_WITHHOLD_ACKS": "1"])
        defer { daemon.stop() }
        var options = ClientOptions(url: daemon.url)
        options.reconnect.initialDelay = .milliseconds(50)
        options.reconnect.maximumDelay = .milliseconds(200)
        let client = TetherClient(options: options)
        try client.connect()
        let room = client.room("counter:resend")
        try await eventually("joined") { room.isSynced }
        let sent = Task { try await client.send("increment", to: "counter:resend", args: ["by": 5]) }
        // A patch leaves the daemon only once its step is stored; the ack is withheld.
        try await eventually("the patch: the action is stored") { room.serverState["count"] == 5 }
        #expect(client.pendingActions.value.count == 1, "its ack did not come")

        daemon.kill9()
        daemon = try Daemon(port: port, dataDirectory: data)
        try await eventually("the resend is answered", timeout: .seconds(20)) { client.pendingActions.value.isEmpty }
        #expect(try await sent.value == 1, "the original ack: version 1")
        try await eventually("the mirror after the restart") { room.isSynced && room.serverState["count"] == 5 }
        #expect(room.state == room.serverState)
        // A fresh client sees it applied once.
        let reader = try await connectedClient(daemon)
        let fresh = reader.room("counter:resend")
        try await eventually("a fresh snapshot") { fresh.isSynced }
        #expect(fresh.state["count"] == 5 && fresh.version == 1)
        await reader.close()
        await client.close()
    }
}
