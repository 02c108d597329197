import Foundation
import Testing
import TetherBinding
import TetherClient
import TetherProtocol
import TetherJSON
import TetherTestSupport

@MainActor
func connectedClient(_ daemon: Daemon, reconnect: Bool = true) async throws -> TetherClient {
    var options = ClientOptions(url: daemon.url)
    options.reconnect.isEnabled = reconnect
    let client = TetherClient(options: options)
    try client.connect()
    try await client.waitUntilConnected()
    return client
}

@Suite("End to end: counter and login", .serialized)
@MainActor
struct CounterAndLoginTests {
    @Test func anActionFromOneClientIsSeenByBothAndAckedWithItsVersion() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let alice = try await connectedClient(daemon), bob = try await connectedClient(daemon)
        let aliceCount = alice.room("counter").observable("/count", as: Int.self)
        let bobRoom = bob.room("counter")
        var bobSeen: [Int?] = []
        let token = bobRoom.observable("/count", as: Int.self).bind { bobSeen.append($0) }
        try await eventually("both joined") { aliceCount.value == 0 && bobRoom.version == 0 }

        let version = try await alice.room("counter").send("increment", ["by": 3])
        #expect(version == 1)
        #expect(aliceCount.value == 3, "the sender's patch arrives before its ack")
        try await eventually("bob sees 3") { bobRoom.state["count"] == 3 }
        #expect(bobRoom.version == version)
        #expect(bobSeen == [nil, 0, 3])
        token.cancel()
        await alice.close()
        await bob.close()
    }

    @Test func serverErrorsComeBackToTheSender() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await connectedClient(daemon)
        await #expect(throws: TetherClientError.self) { try await client.send("fly", to: "counter") }
        do {
            _ = try await client.send("increment", to: "counter", args: ["by": "lots"])
            Issue.record("accepted a string for by")
        } catch TetherClientError.server(let error) {
            #expect(error.code == .invalidArgs)
            #expect(error.message.contains("args.by"))
        }
        do {
            _ = try await client.send("increment", to: "nosuchkind")
        } catch TetherClientError.server(let error) {
            #expect(error.code == .unknownRoom)
        }
        await client.close()
    }

    /// Per-session rooms: each connection has its own login; nothing leaks to the other.
    @Test func loginInstancesArePrivateToTheirConnection() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let first = try await connectedClient(daemon), second = try await connectedClient(daemon)
        let mine = first.room("login"), theirs = second.room("login")
        try await eventually { mine.isSynced && theirs.isSynced }
        try await mine.send("setEmail", ["value": "first@example.com"])
        try await mine.send("setPassword", ["value": "abc"])
        #expect(mine.state["errorMessage"] == "6자리 이상 비밀번호를 입력해주세요.")
        #expect(mine.state["signInEnabled"] == false)
        try await Task.sleep(for: .milliseconds(100))
        #expect(theirs.state == ["email": "", "passwordLength": 0, "signInEnabled": false, "errorMessage": nil, "signedIn": false])
        #expect(theirs.version == 0, "the other connection never got a patch")
        try await theirs.send("setEmail", ["value": "second@example.com"])
        #expect(mine.state["email"] == "first@example.com")
        // A third connection joining later starts from a fresh instance too.
        let third = try await connectedClient(daemon)
        let fresh = third.room("login")
        try await eventually { fresh.isSynced }
        #expect(fresh.state["email"] == "")
        for client in [first, second, third] { await client.close() }
    }
}
