import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherProtocol
import TetherTestSupport

/// Three real nats-server processes (JetStream, one NATS cluster) and real tetherd nodes on
/// loopback, as `Scripts/cluster.sh` starts them.
@MainActor
final class ClusterFixture {
    let nats: NATSCluster
    private(set) var nodes: [String: Daemon] = [:]
    let lease: Int
    /// More tetherd arguments for every node (`--auth-secret`, `--test-kinds`...).
    let arguments: [String]

    init(nodes names: [String] = ["n1", "n2", "n3"], lease: Int = 2, arguments: [String] = []) throws {
        nats = try NATSCluster(size: 3)
        self.lease = lease
        self.arguments = arguments
        do {
            for name in names { try start(name) }
        } catch {
            stop()
            throw error
        }
    }

    @discardableResult
    func start(_ name: String, port: Int = 0) throws -> Daemon {
        let daemon = try Daemon(arguments: ["--nats", nats.urls.joined(separator: ","), "--node", name, "--lease-seconds", "\(lease)",
                                            "--log-level", "info"] + arguments,
                                port: port, timeout: .seconds(60))
        nodes[name] = daemon
        return daemon
    }

    func node(_ name: String) -> Daemon { nodes[name]! }

    /// Every node's URL, `first` first: a client connects there and moves on when it is lost.
    func urls(startingAt first: String) -> String {
        let names = nodes.keys.sorted()
        let ordered = [first] + names.filter { $0 != first }
        return ordered.compactMap { nodes[$0]?.url }.joined(separator: ",")
    }

    /// The node whose `GET /cluster` says it owns `room`, if any.
    func owner(of room: String) -> String? {
        for (name, daemon) in nodes where daemon.isRunning {
            guard let body = try? daemon.httpGET("/cluster").body, let json = try? JSON(parsing: body) else { continue }
            if json["ownedRooms"]?.arrayValue?.contains(.string(room)) == true { return name }
        }
        return nil
    }

    func client(at first: String, reconnect: Bool = true) async throws -> TetherClient {
        var options = ClientOptions(url: urls(startingAt: first))
        options.reconnect.isEnabled = reconnect
        options.reconnect.initialDelay = .milliseconds(50)
        options.reconnect.maximumDelay = .milliseconds(500)
        options.actionTimeout = .seconds(10)
        let client = TetherClient(options: options)
        try client.connect()
        try await client.waitUntilConnected()
        return client
    }

    /// Every node's log so far, for failure messages.
    var logs: String {
        nodes.keys.sorted().map { "--- \($0)\n\(nodes[$0]!.stderr.suffix(4000))" }.joined(separator: "\n")
    }

    func stop() {
        for daemon in nodes.values { daemon.stop(timeout: .seconds(5)) }
        nats.stop()
    }
}

/// Keeps sending `set` actions (its own keys) through one client and records which were acked.
@MainActor
final class Publisher {
    let client: TetherClient
    let index: Int
    let room: String
    private(set) var acked: [String: Int] = [:]
    /// When each acknowledged action was sent, and when its ack came.
    private(set) var acks: [(sent: ContinuousClock.Instant, acked: ContinuousClock.Instant)] = []
    private(set) var unacknowledged = 0
    private var task: Task<Void, Never>?
    private var running = true

    init(client: TetherClient, index: Int, room: String) {
        self.client = client
        self.index = index
        self.room = room
        task = Task { @MainActor [self] in
            var sequence = 0
            while running {
                sequence += 1
                let key = "p\(index)-\(sequence % 40)"
                let sent = ContinuousClock.now
                do {
                    _ = try await client.send("set", to: room, args: ["key": .string(key), "value": .int(sequence)])
                    acked[key] = sequence
                    acks.append((sent, .now))
                } catch {
                    unacknowledged += 1
                    try? await Task.sleep(for: .milliseconds(50))
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// The first ack of an action sent after `instant`.
    func firstAck(ofActionSentAfter instant: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        acks.first { $0.sent > instant }?.acked
    }

    func stop() async {
        running = false
        await task?.value
    }
}

@Suite("End to end: cluster on NATS JetStream", .serialized, .timeLimit(.minutes(5)))
@MainActor
struct ClusterTests {
    /// Every acknowledged `set` is in `state`.
    static func lost(_ publishers: [Publisher], in state: JSON) -> [String] {
        var lost: [String] = []
        for publisher in publishers {
            for (key, value) in publisher.acked where (state["fields"]?[key]?.intValue ?? -1) < value {
                lost.append("\(key)=\(value)")
            }
        }
        return lost
    }

    static func checkObservers(_ observers: [StreamObserver], equal reference: RemoteRoom,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        for observer in observers {
            #expect(observer.room.state == reference.state, sourceLocation: sourceLocation)
            #expect(observer.gaps.isEmpty, "gaps: \(observer.gaps)", sourceLocation: sourceLocation)
            #expect(observer.forks.isEmpty, "forks: \(observer.forks)", sourceLocation: sourceLocation)
            #expect(observer.backwards.isEmpty, "backwards: \(observer.backwards)", sourceLocation: sourceLocation)
            #expect(observer.highest.count == 1, "one epoch throughout, saw \(observer.highest.keys.sorted())", sourceLocation: sourceLocation)
        }
    }

    @Test func clientsOnDifferentNodesConverge() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        var clients: [TetherClient] = []
        for name in ["n1", "n2", "n3"] { clients.append(try await cluster.client(at: name)) }
        let counters = clients.map { StreamObserver(client: $0, room: $0.room("counter:c")) }
        try await eventually("counters synced", timeout: .seconds(30)) { counters.allSatisfy(\.room.isSynced) }
        let todoClients = [try await cluster.client(at: "n1"), try await cluster.client(at: "n2"), try await cluster.client(at: "n3")]
        let todos = todoClients.map { $0.room("todo:c") }
        try await eventually("todos synced", timeout: .seconds(30)) { todos.allSatisfy(\.isSynced) }

        // Random actions from every node at once.
        var increments = 0
        var rng = SeededGenerator(seed: 11)
        let writers = [try await cluster.client(at: "n1"), try await cluster.client(at: "n2"), try await cluster.client(at: "n3")]
        for round in 0..<40 {
            var sends: [Task<Bool, Never>] = []
            for writer in writers {
                let choice = Int.random(in: 0..<4, using: &rng)
                let title = "item \(round)-\(choice)"
                sends.append(Task { @MainActor in
                    do {
                        switch choice {
                        case 0, 1:
                            _ = try await writer.send("increment", to: "counter:c")
                            return true
                        case 2:
                            _ = try await writer.send("add", to: "todo:c", args: ["title": .string(title)])
                        default:
                            if let id = todos[0].state["items"]?.arrayValue?.first?["id"] {
                                _ = try? await writer.send("toggle", to: "todo:c", args: ["id": id])
                            }
                        }
                    } catch {
                        Issue.record("action failed: \(error)")
                    }
                    return false
                })
            }
            for send in sends where await send.value { increments += 1 }
        }
        let expected = increments
        try await eventually("every counter at \(expected)", timeout: .seconds(20)) {
            counters.allSatisfy { $0.room.state["count"] == .int(expected) }
        }
        let referenceClient = try await cluster.client(at: "n2")
        let reference = referenceClient.room("todo:c")
        try await eventually("a fresh todo mirror", timeout: .seconds(20)) { reference.isSynced }
        try await eventually("every todo mirror converges", timeout: .seconds(20)) {
            todos.allSatisfy { $0.version == reference.version && $0.state == reference.state }
        }
        for observer in counters {
            #expect(observer.gaps.isEmpty && observer.forks.isEmpty && observer.backwards.isEmpty, "\(observer.gaps) \(observer.forks)")
        }
        #expect(counters.map(\.room.epoch).allSatisfy { $0 == counters[0].room.epoch })
    }

    @Test func killingTheOwningNodeLosesNothingAcknowledged() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        let room = "bench:failover"
        var observers: [StreamObserver] = []
        for name in ["n1", "n2", "n3", "n1", "n2", "n3"] {
            let client = try await cluster.client(at: name)
            observers.append(StreamObserver(client: client, room: client.room(room)))
        }
        try await eventually("mirrors synced", timeout: .seconds(30)) { observers.allSatisfy(\.room.isSynced) }
        try await eventually("an owner", timeout: .seconds(10)) { cluster.owner(of: room) != nil }
        let owner = try #require(cluster.owner(of: room))
        var publishers: [Publisher] = []
        for (index, name) in ["n1", "n2", "n3"].enumerated() {
            publishers.append(Publisher(client: try await cluster.client(at: name), index: index, room: room))
        }
        try await Task.sleep(for: .seconds(2))

        let killedAt = ContinuousClock.now
        cluster.node(owner).kill9()
        do {
            try await eventually("a new owner", timeout: .seconds(20)) { cluster.owner(of: room).map { $0 != owner } ?? false }
        } catch {
            Issue.record("no new owner:\n\(cluster.logs)")
            throw error
        }
        let survivors = publishers.filter { !$0.client.options.url.hasPrefix(cluster.node(owner).url) }
        try await eventually("acks again after the kill", timeout: .seconds(20)) {
            survivors.contains { $0.firstAck(ofActionSentAfter: killedAt) != nil }
        }
        let firstAck = survivors.compactMap { $0.firstAck(ofActionSentAfter: killedAt) }.min()
        try await Task.sleep(for: .seconds(2))
        for publisher in publishers { await publisher.stop() }

        let referenceClient = try await cluster.client(at: owner == "n1" ? "n2" : "n1")
        let reference = referenceClient.room(room)
        try await eventually("a fresh mirror", timeout: .seconds(20)) { reference.isSynced }
        try await eventually("every mirror converges", timeout: .seconds(30)) {
            observers.allSatisfy { $0.room.version == reference.version && $0.client.connectionState.value.isConnected }
        }
        Self.checkObservers(observers, equal: reference)
        let lost = Self.lost(publishers, in: reference.state)
        #expect(lost.isEmpty, "acknowledged but lost: \(lost.prefix(10))")
        let movedClients = observers.filter { $0.reconnects > 0 }
        #expect(!movedClients.isEmpty, "the dead node's clients resumed on another node")
        let acks = publishers.map(\.acked.count).reduce(0, +)
        print("cluster failover: owner \(owner) killed; first ack on the room \(firstAck.map { "\($0 - killedAt)" } ?? "none") after the kill; \(acks) keys acked, lost \(lost.count), gaps 0, \(movedClients.count) clients moved")
    }

    @Test func killingTheStreamLeaderLosesNothingAcknowledged() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        let room = "bench:leader"
        let watcher = try await cluster.client(at: "n2")
        let observer = StreamObserver(client: watcher, room: watcher.room(room))
        try await eventually("synced", timeout: .seconds(30)) { observer.room.isSynced }
        var publishers: [Publisher] = []
        for (index, name) in ["n1", "n2"].enumerated() {
            publishers.append(Publisher(client: try await cluster.client(at: name), index: index, room: room))
        }
        try await Task.sleep(for: .seconds(1))
        // The nats-server leading the room's stream (only that stream holds messages here).
        var leaderName: String?
        let monitor = cluster.nats.servers[0].monitorPort
        let answer = try runProgram(URL(fileURLWithPath: "/usr/bin/curl"), ["-sf", "http://127.0.0.1:\(monitor)/jsz?streams=true"])
        let jsz = try JSON(parsing: answer.stdout)
        for account in jsz["account_details"]?.arrayValue ?? [] {
            for stream in account["stream_detail"]?.arrayValue ?? [] where stream["name"]?.stringValue?.hasPrefix("TETHER_LOG_") == true {
                if stream["state"]?["messages"]?.intValue ?? 0 > 0, let name = stream["cluster"]?["leader"]?.stringValue { leaderName = name }
            }
        }
        let leader = cluster.nats.server(try #require(leaderName, "found the stream's leader"))
        let killedAt = ContinuousClock.now
        cluster.nats.kill9(leader)
        try await eventually("appends resume after the election", timeout: .seconds(30)) {
            publishers.contains { $0.firstAck(ofActionSentAfter: killedAt) != nil }
        }
        let resumedAt = publishers.compactMap { $0.firstAck(ofActionSentAfter: killedAt) }.min()
        try await Task.sleep(for: .seconds(1))
        for publisher in publishers { await publisher.stop() }
        let referenceClient = try await cluster.client(at: "n1")
        let reference = referenceClient.room(room)
        try await eventually("a fresh mirror", timeout: .seconds(30)) { reference.isSynced }
        try await eventually("converges", timeout: .seconds(30)) { observer.room.version == reference.version }
        Self.checkObservers([observer], equal: reference)
        let lost = Self.lost(publishers, in: reference.state)
        #expect(lost.isEmpty, "acknowledged but lost: \(lost.prefix(10))")
        print("cluster: stream leader \(leader.name) killed; appends acknowledged again after \(resumedAt.map { "\($0 - killedAt)" } ?? "?"); lost \(lost.count)")
    }

    /// The owner is paused past its lease with actions of its own clients in its sockets; another
    /// node takes the room and acts. When the old owner wakes up, every answer must be true: an
    /// ack names the version whose step holds that very action (the ledger names each step's
    /// action), an error that says "not applied" names an action that is nowhere in the log.
    @Test func aPausedOwnerAcksNothingItDidNotStore() async throws {
        let cluster = try ClusterFixture(arguments: ["--test-kinds"])
        defer { cluster.stop() }
        let room = "ledger:fence"
        var observers: [StreamObserver] = []
        for name in ["n1", "n2", "n3"] {
            let client = try await cluster.client(at: name)
            observers.append(StreamObserver(client: client, room: client.room(room)))
        }
        try await eventually("synced: \(observers.map(\.room.isSynced))\n\(cluster.logs)", timeout: .seconds(30)) {
            observers.allSatisfy(\.room.isSynced)
        }
        _ = try await observers[0].client.send("add", to: room, args: ["id": "first", "by": 1])
        try await eventually("an owner", timeout: .seconds(10)) { cluster.owner(of: room) != nil }
        let owner = try #require(cluster.owner(of: room))
        let ownerDaemon = cluster.node(owner)

        // Clients of the owner's node send actions; the node is paused before it reads them.
        var sockets: [RawWebSocket] = []
        for _ in 0..<4 {
            let socket = try RawWebSocket(port: ownerDaemon.port)
            _ = try socket.receiveJSON()
            sockets.append(socket)
        }
        kill(ownerDaemon.pid, SIGSTOP)
        for (index, socket) in sockets.enumerated() {
            try socket.send(json: ["type": "action", "room": .string(room), "name": "add", "args": ["id": .string("paused-\(index)"), "by": 1], "id": 77])
        }

        // Past the lease, another node takes the room and acts on it.
        let other = try #require(observers.first { !$0.client.currentURL.hasPrefix(ownerDaemon.url) })
        let deadline = ContinuousClock.now + .seconds(30)
        var sent = 0
        while (try? await other.client.send("add", to: room, args: ["id": .string("other-\(sent)"), "by": 1])) == nil {
            sent += 1
            guard ContinuousClock.now < deadline else { Issue.record("no other node took the room"); return }
            try await Task.sleep(for: .milliseconds(200))
        }
        for index in 0..<6 { _ = try await other.client.send("add", to: room, args: ["id": .string("after-\(index)"), "by": 1]) }

        kill(ownerDaemon.pid, SIGCONT)
        var replies: [String: JSON] = [:]
        for (index, socket) in sockets.enumerated() {
            replies["paused-\(index)"] = try socket.receiveJSON(timeout: .seconds(20), until: { $0["id"] == 77 })
        }
        try await eventually("the old owner stepped down", timeout: .seconds(10)) { cluster.owner(of: room) != owner }

        let referenceClient = try await cluster.client(at: "n3")
        let reference = referenceClient.room(room)
        try await eventually("a fresh mirror", timeout: .seconds(20)) { reference.isSynced }
        try await eventually("converges", timeout: .seconds(20)) { observers.allSatisfy { $0.room.version == reference.version } }
        Self.checkObservers(observers, equal: reference)
        // The ledger's `recent` holds the ids of the last versions, the newest last.
        let recent = reference.state["recent"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let newest = try #require(reference.version)
        #expect(recent.count < 32, "the whole test's history is in the ledger's window")
        func version(of id: String) -> Int? { recent.firstIndex(of: id).map { newest - recent.count + 1 + $0 } }
        for (id, reply) in replies.sorted(by: { $0.key < $1.key }) {
            switch reply["type"]?.stringValue {
            case "ack":
                #expect(reply["version"]?.intValue == version(of: id), "\(id) acked at \(reply["version"] ?? .null), but the log has it at \(version(of: id).map(String.init) ?? "no version"): \(recent)")
            case "error":
                #expect(reply["code"] == "unavailable", "\(reply)")
                if reply["applied"] == .bool(false) { #expect(version(of: id) == nil, "\(id) said not applied, but the log has it: \(recent)") }
            default:
                Issue.record("\(id): unexpected reply \(reply)")
            }
        }
        #expect(recent.count == Set(recent).count, "no action applied twice: \(recent)")
        let stopped = ownerDaemon.stderr
        #expect(stopped.contains("stops owning room \(room)"), "the old owner says it stepped down:\n\(stopped.suffix(2000))")
    }

    @Test func nodesJoinAndLeaveWhileClientsStayConnected() async throws {
        let cluster = try ClusterFixture(nodes: ["n1", "n2"])
        defer { cluster.stop() }
        let room = "todo:membership"
        var observers: [StreamObserver] = []
        for name in ["n1", "n2"] {
            let client = try await cluster.client(at: name)
            observers.append(StreamObserver(client: client, room: client.room(room)))
        }
        try await eventually("synced", timeout: .seconds(30)) { observers.allSatisfy(\.room.isSynced) }
        _ = try await observers[0].client.send("add", to: room, args: ["title": "before n3"])

        // A third node joins: its clients see the room and act on it.
        try cluster.start("n3")
        let late = try await cluster.client(at: "n3")
        let lateObserver = StreamObserver(client: late, room: late.room(room))
        observers.append(lateObserver)
        try await eventually("the new node serves the room", timeout: .seconds(30)) { lateObserver.room.isSynced }
        #expect(lateObserver.room.state["items"]?.arrayValue?.count == 1)
        _ = try await late.send("add", to: room, args: ["title": "from n3"])

        // n2 leaves gracefully (SIGTERM): its clients move to another node and resume.
        #expect(cluster.node("n2").stop() == 0)
        _ = try await observers[0].client.send("add", to: room, args: ["title": "after n2 left"])
        let referenceClient = try await cluster.client(at: "n1")
        let reference = referenceClient.room(room)
        try await eventually("a fresh mirror", timeout: .seconds(20)) { reference.isSynced }
        try await eventually("everyone converges", timeout: .seconds(30)) {
            observers.allSatisfy { $0.room.version == reference.version && $0.client.connectionState.value.isConnected }
        }
        #expect(reference.state["items"]?.arrayValue?.count == 3)
        Self.checkObservers(observers, equal: reference)
        #expect(observers[1].reconnects > 0, "n2's client moved")
        // The cluster view from a node lists the nodes it sees.
        let view = try JSON(parsing: try cluster.node("n1").httpGET("/cluster").body)
        #expect(view["node"] == "n1")
        try await eventually("n1 sees itself and n3", timeout: .seconds(10)) {
            let view = try JSON(parsing: try cluster.node("n1").httpGET("/cluster").body)
            return Set(view["nodes"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []) == ["n1", "n3"]
        }
    }
}
