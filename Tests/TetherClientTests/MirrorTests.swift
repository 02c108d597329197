import Foundation
import Synchronization
import Testing
import TetherBinding
import TetherClient
import TetherJSON
import TetherTestSupport

/// The client's mirror against a scripted server that sends what a real daemon never would.
@Suite("Client mirror against a scripted server", .serialized)
@MainActor
struct MirrorTests {
    nonisolated static let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#

    nonisolated static func snapshot(_ version: Int, _ state: String, epoch: String = "E") -> String {
        #"{"type":"snapshot","room":"r","epoch":"\#(epoch)","version":\#(version),"state":\#(state)}"#
    }

    nonisolated static func patch(_ from: Int, _ version: Int, _ ops: String, epoch: String = "E") -> String {
        #"{"type":"patch","room":"r","epoch":"\#(epoch)","from":\#(from),"version":\#(version),"ops":\#(ops)}"#
    }

    func connect(_ server: ScriptedServer) async throws -> TetherClient {
        var options = ClientOptions(url: server.url)
        options.reconnect.initialDelay = .milliseconds(20)
        let client = TetherClient(options: options)
        try client.connect()
        try await client.waitUntilConnected()
        return client
    }

    @Test func typedObservablesFireOnlyForTheirPath() async throws {
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            text.contains(#""type":"join""#) ? [Self.snapshot(0, #"{"count":1,"name":"a","items":[1,2]}"#)] : []
        }
        defer { server.stop() }
        let client = try await connect(server)
        let room = client.room("r")
        var counts: [Int?] = [], names: [String] = [], items: [[Int]?] = []
        let bag = CancellableBag()
        room.observable("/count", as: Int.self).bind { counts.append($0) }.store(in: bag)
        room.observable("/name", as: String.self, default: "?").bind { names.append($0) }.store(in: bag)
        room.observable("/items", as: [Int].self).bind { items.append($0) }.store(in: bag)
        try await eventually { room.isSynced }
        server.broadcast([Self.patch(0, 1, #"[{"op":"replace","path":"/count","value":2}]"#)])
        try await eventually { room.version == 1 }
        server.broadcast([Self.patch(1, 2, #"[{"op":"add","path":"/items/-","value":3}]"#)])
        try await eventually { room.version == 2 }
        #expect(counts == [nil, 1, 2])
        #expect(names == ["?", "a"], "unchanged paths don't fire")
        #expect(items == [nil, [1, 2], [1, 2, 3]], "a change below the path fires")
        #expect(room.lastChangedPaths == ["/items/-"])
        await client.close()
    }

    @Test func listObservableGetsItemEvents() async throws {
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            text.contains(#""type":"join""#) ? [Self.snapshot(0, #"{"items":[{"id":"a","done":false}]}"#)] : []
        }
        defer { server.stop() }
        struct Item: Decodable, Equatable { var id: String; var done: Bool }
        let client = try await connect(server)
        let room = client.room("r")
        let list = room.list("/items", of: Item.self)
        var events: [String] = []
        let token = list.observeChanges { change in
            switch change {
            case .insert(let i, let item): events.append("insert \(i) \(item.id)")
            case .remove(let i, _): events.append("remove \(i)")
            case .replace(let i, _, let item): events.append("replace \(i) \(item.done)")
            }
        }
        try await eventually { room.isSynced }
        server.broadcast([
            Self.patch(0, 1, #"[{"op":"add","path":"/items/1","value":{"id":"b","done":false}}]"#),
            Self.patch(1, 2, #"[{"op":"replace","path":"/items/0/done","value":true},{"op":"remove","path":"/items/1"}]"#),
        ])
        try await eventually { room.version == 2 }
        #expect(events == ["insert 0 a", "insert 1 b", "replace 0 true", "remove 1"], "the snapshot, then one event per operation")
        #expect(list.elements == [Item(id: "a", done: true)])
        token.cancel()
        await client.close()
    }

    @Test func aGapMakesTheRoomRejoinWithSince() async throws {
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            if text.contains(#""since""#) {
                return [Self.patch(1, 3, #"[{"op":"replace","path":"/n","value":3}]"#)]  // served from history
            }
            return text.contains(#""type":"join""#) ? [Self.snapshot(0, #"{"n":0}"#)] : []
        }
        defer { server.stop() }
        let client = try await connect(server)
        let room = client.room("r")
        try await eventually { room.isSynced }
        server.broadcast([Self.patch(0, 1, #"[{"op":"replace","path":"/n","value":1}]"#)])
        try await eventually { room.version == 1 }
        server.broadcast([Self.patch(2, 3, #"[{"op":"replace","path":"/n","value":3}]"#)])  // 1 -> 2 is missing
        try await eventually("the gap is repaired") { room.version == 3 }
        #expect(room.state == ["n": 3])
        #expect(server.received.contains { $0.contains(#""since":{"epoch":"E","version":1}"#) })
        await client.close()
    }

    @Test func aPatchThatDoesNotApplyIsNeverHalfAppliedAndResyncs() async throws {
        let joins = Mutex(0)
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            guard text.contains(#""type":"join""#) else { return [] }
            let first = joins.withLock { count in
                count += 1
                return count == 1
            }
            return first ? [Self.snapshot(0, #"{"a":[1]}"#)] : [Self.snapshot(9, #"{"a":[9]}"#)]
        }
        defer { server.stop() }
        let client = try await connect(server)
        let room = client.room("r")
        var states: [ConnectionState] = []
        let token = client.connectionState.bind { states.append($0) }
        var seen: [JSON] = []
        let changes = room.observeChanges { _ in seen.append(room.state) }
        try await eventually { room.isSynced }
        // The first operation applies, the second cannot: nothing of it may stick.
        server.broadcast([Self.patch(0, 1, #"[{"op":"add","path":"/a/-","value":2},{"op":"remove","path":"/missing"}]"#)])
        try await eventually("resynced from a snapshot") { room.version == 9 }
        #expect(room.state == ["a": [9]])
        #expect(seen == [["a": [1]], ["a": [9]]], "the mirror went from the snapshot to the resync, never through [1, 2]")
        changes.cancel()
        #expect(server.received.filter { $0.contains(#""type":"join""#) }.count == 2)
        #expect(!server.received.last!.contains("since"), "a failed patch resyncs from a fresh snapshot")
        #expect(states.contains(.resynced(room: "r")))
        token.cancel()
        await client.close()
    }

    @Test func garbageFromTheServerIsIgnored() async throws {
        let server = try ScriptedServer(greeting: [Self.hello, "not json", #"{"type":"snapshot","room":"r"}"#, "[]", #"{"type":"patch","room":"r","epoch":"E","from":0,"version":1,"ops":[{"op":"fly"}]}"#]) { text in
            text.contains(#""type":"join""#) ? [Self.snapshot(0, #"{"ok":true}"#)] : []
        }
        defer { server.stop() }
        let client = try await connect(server)
        var undecodable = 0
        client.onUndecodable = { _, _ in undecodable += 1 }
        let room = client.room("r")
        try await eventually { room.isSynced }
        #expect(room.state == ["ok": true])
        await client.close()
    }

    @Test func reconnectsWithBackoffAndRejoinsWithSince() async throws {
        let server = try ScriptedServer(greeting: [Self.hello]) { text in
            guard text.contains(#""type":"join""#) else { return [] }
            return text.contains("since") ? [Self.patch(4, 4, "[]")] : [Self.snapshot(4, #"{"n":4}"#)]
        }
        defer { server.stop() }
        let client = try await connect(server)
        let room = client.room("r")
        var states: [String] = []
        let token = client.connectionState.bind { states.append("\($0)".components(separatedBy: " ").first!) }
        try await eventually { room.isSynced }
        server.dropAll()
        try await eventually("reconnected") { server.connectionCount == 2 && client.connectionState.value == .live }
        try await eventually { server.received.contains { $0.contains(#""since":{"epoch":"E","version":4}"#) } }
        #expect(states.starts(with: ["live", "reconnecting", "live"]))
        #expect(room.state == ["n": 4])
        token.cancel()
        await client.close()
    }

    @Test func backoffGrowsAndIsCapped() {
        var policy = ReconnectPolicy()
        policy.initialDelay = .milliseconds(100)
        policy.maximumDelay = .seconds(1)
        #expect(policy.delay(forAttempt: 1, jitter: 1) == .milliseconds(100))
        #expect(policy.delay(forAttempt: 3, jitter: 1) == .milliseconds(400))
        #expect(policy.delay(forAttempt: 10, jitter: 1) == .seconds(1))
        #expect(policy.delay(forAttempt: 10, jitter: 0.5) == .milliseconds(500))
    }
}
