import Foundation
import Testing
import TetherBinding
import TetherClient
import TetherProtocol
import TetherJSON
import TetherTestSupport

/// The crash test: clients act and mirror while the daemon is killed with SIGKILL and restarted
/// several times. Then every acknowledged action's effect must be in the final state, every
/// client must have reconnected on its own, every mirror must equal a fresh snapshot, and no
/// client may have seen a version go backwards within an epoch.
///
/// This is the short version; `Scripts/chaos.sh` runs it longer (CHAOS_KILLS, CHAOS_CLIENTS,
/// CHAOS_PUBLISHERS, CHAOS_SECONDS_BETWEEN_KILLS).
@Suite("End to end: chaos", .serialized)
@MainActor
struct ChaosTests {
    static func setting(_ name: String, _ fallback: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? fallback
    }

    @Test func killNineRepeatedlyLosesNoAcknowledgedAction() async throws {
        let kills = Self.setting("CHAOS_KILLS", 3)
        let clientCount = Self.setting("CHAOS_CLIENTS", 8)
        let publisherCount = Self.setting("CHAOS_PUBLISHERS", 3)
        let secondsBetweenKills = Self.setting("CHAOS_SECONDS_BETWEEN_KILLS", 2)
        let room = "bench:chaos"
        let port = try freePort()
        var daemon = try Daemon(port: port)
        let dataDirectory = daemon.dataDirectory
        defer { daemon.stop() }

        func makeClient() -> TetherClient {
            var options = ClientOptions(url: "ws://127.0.0.1:\(port)")
            options.reconnect.initialDelay = .milliseconds(50)
            options.reconnect.maximumDelay = .milliseconds(500)
            options.actionTimeout = .seconds(5)
            let client = TetherClient(options: options)
            try? client.connect()
            return client
        }
        var observers: [StreamObserver] = []
        for _ in 0..<clientCount {
            let client = makeClient()
            observers.append(StreamObserver(client: client, room: client.room(room)))
        }
        try await eventually("all mirrors synced", timeout: .seconds(30)) { observers.allSatisfy { $0.room.isSynced } }

        // Publishers: each sets its own keys; an ack is recorded only when it arrives.
        var acked: [String: Int] = [:]
        var ackedActions = 0
        var unacknowledged = 0
        final class Flag { var isSet = true }
        let running = Flag()
        var publishers: [Task<Void, Never>] = []
        for index in 0..<publisherCount {
            let client = makeClient()
            publishers.append(Task { @MainActor in
                var sequence = 0
                while running.isSet {
                    sequence += 1
                    let key = "p\(index)-\(sequence % 50)"
                    do {
                        _ = try await client.send("set", to: room, args: ["key": .string(key), "value": .int(sequence)])
                        acked[key] = sequence
                        ackedActions += 1
                    } catch {
                        unacknowledged += 1  // dropped or timed out: its effect may or may not be there
                        try? await Task.sleep(for: .milliseconds(20))
                    }
                }
                await client.close()
            })
        }

        for kill in 1...max(1, kills) {
            try await Task.sleep(for: .seconds(secondsBetweenKills))
            daemon.kill9()
            try await Task.sleep(for: .milliseconds(300))
            daemon = try Daemon(port: port, dataDirectory: dataDirectory)
            try await eventually("every client reconnects by itself after kill \(kill)", timeout: .seconds(30)) {
                observers.allSatisfy { $0.reconnects >= kill && $0.client.connectionState.value.isConnected }
            }
        }
        try await Task.sleep(for: .seconds(1))
        running.isSet = false
        for publisher in publishers { await publisher.value }

        // Every client came back by itself and its mirror equals a fresh snapshot.
        let fresh = makeClient()
        let reference = fresh.room(room)
        try await eventually("a fresh client syncs", timeout: .seconds(20)) { reference.isSynced }
        try await eventually("every mirror converges", timeout: .seconds(30)) {
            observers.allSatisfy { $0.room.version == reference.version && $0.client.connectionState.value.isConnected }
        }
        for observer in observers {
            #expect(observer.room.state == reference.state)
            #expect(observer.reconnects >= kills, "reconnected after every kill")
            #expect(observer.backwards.isEmpty, "versions went backwards: \(observer.backwards)")
            #expect(observer.gaps.isEmpty, "gaps: \(observer.gaps)")
            #expect(observer.highest.count == 1, "one epoch throughout: durable rooms keep their history")
        }
        var lost: [String] = []
        for (key, value) in acked {
            let stored = reference.state["fields"]?[key]?.intValue ?? -1
            if stored < value { lost.append("\(key)=\(value) (found \(stored))") }
        }
        #expect(lost.isEmpty, "acknowledged but lost: \(lost.prefix(10))")
        #expect(acked.count > 0)
        print("chaos: kills survived \(kills), clients \(clientCount), acked actions \(ackedActions) (last value of \(acked.count) keys checked), lost \(lost.count), actions without ack \(unacknowledged), final version \(reference.version ?? -1)")
        for observer in observers { await observer.client.close() }
        await fresh.close()
    }
}
