import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// The vote room against the real daemon, read from the wire: each voter's frames carry their
/// own choice and nobody else's; everyone's carry the totals.
@Suite("End to end: per-viewer values", .serialized)
struct PerViewerTests {
    /// One raw connection mirroring one room from the frames it receives (also used by the
    /// cluster's tests, where a first join may wait for the room to load: `timeout`).
    final class Voter {
        let socket: RawWebSocket
        let room: String
        let timeout: Duration
        /// The connection's session id (its `hello`).
        let sessionID: String
        var state: JSON = .null
        var epoch = ""
        var version = -1
        /// Every frame received for the room, as text, to check what crossed the wire.
        var frames: [String] = []
        private var nextID = 1

        init(port: Int, room: String, token: String?, presence: JSON? = nil, since: JSON? = nil, timeout: Duration = .seconds(5)) throws {
            socket = try RawWebSocket(port: port)
            self.room = room
            self.timeout = timeout
            let hello = try socket.receiveJSON()
            #expect(hello["type"] == "hello")
            sessionID = hello["session"]?.stringValue ?? ""
            var join: [String: JSON] = ["type": "join", "room": .string(room), "id": 0]
            if let token { join["token"] = .string(token) }
            if let presence { join["presence"] = presence }
            if let since { join["since"] = since }
            try socket.send(json: .object(join))
            try readUntilAck(0)
        }

        func act(_ name: String, _ args: JSON = [:]) throws {
            let id = nextID
            nextID += 1
            try socket.send(json: ["type": "action", "room": .string(room), "name": .string(name), "args": args, "id": .int(id)])
            try readUntilAck(id)
        }

        /// Reads (and mirrors) until the mirrored state satisfies `done`.
        func follow(timeout: Duration, until done: (JSON) -> Bool) throws {
            let start = ContinuousClock.now
            while !done(state) {
                try read(try socket.receiveJSON(timeout: max(.milliseconds(1), timeout - (.now - start))))
            }
        }

        /// Reads (and mirrors) until the ack of request `id`.
        func readUntilAck(_ id: Int) throws {
            while true {
                let message = try socket.receiveJSON(timeout: timeout)
                if message["type"] == "ack" && message["id"]?.intValue == id { return }
                try read(message)
            }
        }

        /// Mirrors one message (throws on an error frame).
        private func read(_ message: JSON) throws {
            frames.append(String(decoding: message.encoded(), as: UTF8.self))
            switch message["type"]?.stringValue {
            case "snapshot":
                state = message["state"]!
                epoch = message["epoch"]?.stringValue ?? ""
                version = message["version"]!.intValue!
            case "patch":
                #expect(message["from"]?.intValue == version, "gapless: \(message)")
                epoch = message["epoch"]?.stringValue ?? epoch
                try state.apply(JSONPatch.decode(message["ops"]!))
                version = message["version"]!.intValue!
            case "error":
                throw RefusedRequest(message: message)
            default: break
            }
        }

        /// Reads whatever else arrives within a short while (patches caused by others).
        func catchUp(to version: Int) throws {
            while self.version < version { try read(try socket.receiveJSON()) }
        }
    }

    struct RefusedRequest: Error { let message: JSON }

    /// A token for the vote room signed with the secret "s3cret".
    static func token(_ subject: String) throws -> String {
        let result = try runProgram(Daemon.executable("tetherd"),
                                    ["token", "--secret", "s3cret", "--subject", subject, "--rooms", "vote", "--ttl", "600"])
        #expect(result.status == 0)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func tokenSubjectsSeeOnlyTheirOwnChoiceAndEveryoneTheTotals() throws {
        let daemon = try Daemon(arguments: ["--auth-secret", "s3cret", "--memory-only"])
        defer { daemon.stop() }
        let ana = try Voter(port: daemon.port, room: "vote", token: try Self.token("ana"))
        let bo = try Voter(port: daemon.port, room: "vote", token: try Self.token("bo"))
        let cy = try Voter(port: daemon.port, room: "vote", token: try Self.token("cy"))

        try ana.act("vote", ["option": "pizza"])
        try bo.act("vote", ["option": "salad"])
        for voter in [ana, bo, cy] { try voter.catchUp(to: 2) }

        #expect(ana.state["mine"] == "pizza")
        #expect(bo.state["mine"] == "salad")
        #expect(cy.state["mine"] == nil, "a viewer who did not vote has no mine")
        for voter in [ana, bo, cy] {
            #expect(voter.state["totals"] == ["pizza": 1, "noodles": 0, "salad": 1])
            #expect(voter.state["ballots"] == .null)
        }
        // Nothing of another's choice crossed the wire.
        #expect(!bo.frames.contains { $0.contains("pizza\"}") && $0.contains("/mine") }, "\(bo.frames)")
        #expect(!ana.frames.contains { $0.contains("/mine") && $0.contains("salad") }, "\(ana.frames)")
        #expect(!cy.frames.contains { $0.contains("mine") }, "\(cy.frames)")

        // Closing shows everyone the ballots.
        try cy.act("close")
        for voter in [ana, bo] { try voter.catchUp(to: 3) }
        for voter in [ana, bo, cy] { #expect(voter.state["ballots"] == ["ana": "pizza", "bo": "salad"]) }
    }

    @Test func anonymousConnectionsAreViewersOfTheirOwn() throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let first = try Voter(port: daemon.port, room: "vote", token: nil)
        let anonymous = try Voter(port: daemon.port, room: "vote", token: nil)
        try first.act("vote", ["option": "noodles"])
        try anonymous.catchUp(to: 1)
        #expect(first.state["mine"] == "noodles")
        #expect(anonymous.state["mine"] == nil && anonymous.state["totals"]?["noodles"] == 1)
        #expect(!anonymous.frames.contains { $0.contains("mine") }, "\(anonymous.frames)")
    }

    /// The benchmark hook: tether-load over rooms whose every turn changes each viewer's own
    /// value (10 distinct views, or one per subscriber) checks out clean.
    @Test(arguments: ["bench-views10", "bench-viewers"])
    func tetherLoadRunsCleanOverPerViewerRooms(kind: String) throws {
        let daemon = try Daemon(arguments: ["--test-kinds", "--memory-only"])
        defer { daemon.stop() }
        let clients = 30
        let run = try runProgram(Daemon.executable("tether-load"), [
            "--url", daemon.url, "--server-pid", String(daemon.pid), "--kind", kind, "--clients", String(clients),
            "--rate", "30", "--duration", "2", "--warmup", "0.5", "--json", "--quiet", "--verify-scanner",
        ], timeout: .seconds(60))
        #expect(run.status == 0, "tether-load failed:\n\(run.stderr)\n\(run.stdout)")
        let result = try JSON(parsing: run.stdout.split(separator: "\n").last.map(String.init) ?? "")
        #expect(result["ok"] == true, "\(result)")
        for key in ["lost", "duplicates", "gaps", "out_of_order", "protocol_errors", "errors", "unacked"] {
            #expect(result[key]?.intValue == 0, "\(key) should be 0: \(result)")
        }
        let sent = try #require(result["actions_sent"]?.intValue)
        #expect(sent > 30)
        #expect(result["deliveries"]?.intValue == sent * clients, "every action reached every subscriber once: \(result)")
    }
}
