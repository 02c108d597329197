import Foundation
import Testing
import TetherBinding
import TetherClient
import TetherProtocol
import TetherJSON
import TetherTestSupport

@Suite("End to end: convergence and resume", .serialized)
@MainActor
struct ConvergenceAndResumeTests {
    /// About 5 clients send about 1,000 random todo actions between them; every mirror, built
    /// only from its snapshot and patches, ends equal to a fresh client's snapshot.
    @Test func mirrorsConvergeUnderConcurrentRandomActions() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        var clients: [TetherClient] = []
        for _ in 0..<5 { clients.append(try await connectedClient(daemon)) }
        let room = "todo:convergence"
        let mirrors = clients.map { $0.room(room) }
        try await eventually("all joined") { mirrors.allSatisfy(\.isSynced) }

        var workers: [Task<(ok: Int, failed: Int), any Error>] = []
        for (index, client) in clients.enumerated() {
            let mirror = mirrors[index]
            workers.append(Task { @MainActor in
                var rng = SeededGenerator(seed: 77 + UInt64(index))
                var ok = 0, failed = 0
                for step in 0..<200 {
                    let (action, args) = randomTodoAction(mirror.state, step: step, using: &rng)
                    do {
                        _ = try await client.send(action, to: room, args: args)
                        ok += 1
                    } catch TetherClientError.server(let error) where error.code == .invalidArgs {
                        failed += 1  // e.g. toggling an item another client just removed
                    }
                }
                return (ok, failed)
            })
        }
        var sent = 0, rejected = 0
        for worker in workers {
            let result = try await worker.value
            sent += result.ok
            rejected += result.failed
        }
        #expect(sent + rejected == 1_000)
        #expect(sent > 800, "most random actions apply")

        let fresh = try await connectedClient(daemon)
        let reference = fresh.room(room)
        try await eventually { reference.isSynced }
        let finalVersion = try #require(reference.version)
        try await eventually("every mirror reaches the final version") { mirrors.allSatisfy { $0.version == finalVersion } }
        for mirror in mirrors { #expect(mirror.state == reference.state) }
        #expect(finalVersion > 0 && finalVersion <= sent, "a version needs an applied action")
        for client in clients + [fresh] { await client.close() }
    }

    /// A client that drops and rejoins with `since` gets the missing patches, not a snapshot;
    /// when the history no longer holds them, it gets a snapshot.
    @Test(arguments: [(history: 1_000, expectPatch: true), (history: 3, expectPatch: false)])
    func resumeUsesHistoryWhenItCan(history: Int, expectPatch: Bool) async throws {
        let daemon = try Daemon(arguments: ["--history-max-patches", "\(history)"])
        defer { daemon.stop() }
        let writer = try await connectedClient(daemon)
        let reader = try RawWebSocket(port: daemon.port)
        _ = try reader.receiveJSON()  // hello
        try reader.send(json: ["type": "join", "room": "counter:resume"])
        let snapshot = try reader.receiveJSON()
        #expect(snapshot["type"] == "snapshot")
        let epoch = try #require(snapshot["epoch"])
        try await writer.send("increment", to: "counter:resume")
        let first = try reader.receiveJSON()
        #expect(first["type"] == "patch" && first["version"] == 1)
        try reader.sendClose()
        for _ in 0..<5 { try await writer.send("increment", to: "counter:resume") }

        let again = try RawWebSocket(port: daemon.port)
        _ = try again.receiveJSON()
        try again.send(json: ["type": "join", "room": "counter:resume", "since": ["epoch": epoch, "version": 1]])
        let reply = try again.receiveJSON()
        if expectPatch {
            #expect(reply["type"] == "patch")
            #expect(reply["from"] == 1)
            var state: JSON = ["count": 1]
            try state.apply(JSONPatch.decode(try #require(reply["ops"])))
            let version = try #require(reply["version"]?.intValue)
            if version < 6 {
                let more = try again.receiveJSON()
                try state.apply(JSONPatch.decode(try #require(more["ops"])))
            }
            #expect(state == ["count": 6])
        } else {
            #expect(reply["type"] == "snapshot")
            #expect(reply["version"] == 6)
            #expect(reply["state"] == ["count": 6])
        }
        let metrics = try daemon.httpGET("/metrics").body
        #expect(metrics.contains(expectPatch ? #"tether_resumes_total{result="history"} 1"# : #"tether_resumes_total{result="snapshot"} 1"#))
        await writer.close()
    }

    @Test func resumeAtTheNewestVersionGetsAnEmptyPatch() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "counter"])
        let snapshot = try socket.receiveJSON()
        try socket.send(json: ["type": "join", "room": "counter", "since": ["epoch": try #require(snapshot["epoch"]), "version": 0]])
        let reply = try socket.receiveJSON()
        #expect(reply["type"] == "patch" && reply["from"] == 0 && reply["version"] == 0 && reply["ops"] == [])
        try socket.send(json: ["type": "join", "room": "counter", "since": ["epoch": "another-epoch", "version": 0]])
        #expect(try socket.receiveJSON()["type"] == "snapshot", "a different epoch can't be resumed")
    }

    /// The client library reconnects by itself and resumes with patches after its connection
    /// drops (here: the server closes it for sending garbage).
    @Test func clientReconnectsAndResumesWithPatches() async throws {
        let daemon = try Daemon(arguments: ["--log-level", "error"])
        defer { daemon.stop() }
        let writer = try await connectedClient(daemon)
        let client = try await connectedClient(daemon)
        let room = client.room("counter:reconnect")
        var changes: [String] = []
        let token = room.observeChanges { change in
            switch change {
            case .snapshot(_, let resynced): changes.append(resynced ? "resync" : "snapshot")
            case .patch: changes.append("patch")
            case .predicted: changes.append("predicted")
            }
        }
        var states: [ConnectionState] = []
        let stateToken = client.connectionState.bind { states.append($0) }
        try await eventually { room.isSynced }
        try await writer.send("increment", to: "counter:reconnect")
        try await eventually { room.state["count"] == 1 }

        // Kill the connection from the server side: a burst of invalid frames gets it closed with 1008.
        for _ in 0..<60 { await sendRawGarbage(through: client) }
        try await eventually("the client notices the drop") { states.contains { if case .reconnecting = $0 { return true } else { return false } } }
        try await writer.send("increment", to: "counter:reconnect")
        try await writer.send("increment", to: "counter:reconnect")
        try await eventually("it comes back and catches up", timeout: .seconds(15)) { room.state["count"] == 3 && client.connectionState.value == .live }
        #expect(changes.first == "snapshot")
        #expect(!changes.contains("resync"), "a short outage costs patches, not a snapshot: \(changes)")
        #expect(changes.filter { $0 == "snapshot" }.count == 1)
        token.cancel()
        stateToken.cancel()
        await writer.close()
        await client.close()
    }

    private func sendRawGarbage(through client: TetherClient) async {
        _ = try? await client.send("", to: "")  // an empty room name: rejected, counts as invalid
    }
}

/// A random todo action, mostly valid for the state the client currently sees.
func randomTodoAction(_ state: JSON, step: Int, using rng: inout SeededGenerator) -> (String, JSON?) {
    let ids = state["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
    let roll = Int.random(in: 0..<100, using: &rng)
    if ids.isEmpty || roll < 35 { return ("add", ["title": .string("item \(step) \(JSON.randomString(using: &rng, maxLength: 5))")]) }
    let id = JSON.string(ids.randomElement(using: &rng)!)
    switch roll {
    case ..<60: return ("toggle", ["id": id])
    case ..<75: return ("rename", ["id": id, "title": .string("renamed \(step)")])
    case ..<92: return ("remove", ["id": id])
    default: return ("clearCompleted", nil)
    }
}
