import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport

/// Presence across tetherd nodes on a NATS cluster: members on one node are seen on the others,
/// and a killed node's members leave within a bounded time (heartbeat silence).
@Suite("End to end: presence on a cluster", .serialized, .timeLimit(.minutes(3)))
@MainActor
struct ClusterPresenceTests {
    @Test func membersOnTwoNodesSeeEachOtherAndAKilledNodesMembersLeave() throws {
        let cluster = try ClusterFixture(nodes: ["n1", "n2"])
        defer { cluster.stop() }
        let alice = try RawWebSocket(port: cluster.node("n1").port), bob = try RawWebSocket(port: cluster.node("n2").port)
        let aliceID = try alice.receiveJSON()["session"]?.stringValue ?? "", bobID = try bob.receiveJSON()["session"]?.stringValue ?? ""
        try alice.sendText(#"{"type":"join","room":"todo:cluster","id":1,"presence":{"name":"alice"}}"#)
        _ = try alice.receiveJSON(timeout: .seconds(30)) { $0["type"] == "ack" }
        try bob.sendText(#"{"type":"join","room":"todo:cluster","id":1,"presence":{"name":"bob"}}"#)
        let bobSees = try bob.receiveJSON(timeout: .seconds(30)) { $0["type"] == "presence" }
        #expect(bobSees["members"]?[bobID]?["data"] == ["name": "bob"])

        // Each sees the other within a heartbeat or so, whatever the order of the starts.
        let aliceSeesBob = try alice.receiveJSON(timeout: .seconds(10)) { $0["type"] == "presence_patch" && $0["ops"]?[0]?["path"] == .string("/" + bobID) }
        #expect(aliceSeesBob["ops"]?[0]?["value"] == ["user": .string(bobID), "data": ["name": "bob"]])
        if bobSees["members"]?[aliceID] == nil {
            let bobSeesAlice = try bob.receiveJSON(timeout: .seconds(10)) { $0["type"] == "presence_patch" && $0["ops"]?[0]?["path"] == .string("/" + aliceID) }
            #expect(bobSeesAlice["ops"]?[0]?["op"] == "add")
        }

        try bob.sendText(#"{"type":"presence","room":"todo:cluster","data":{"name":"bob","editing":"t1"},"id":2}"#)
        let changed = try alice.receiveJSON(timeout: .seconds(10)) { $0["type"] == "presence_patch" }
        #expect(changed["ops"] == [["op": "replace", "path": .string("/\(bobID)/data"), "value": ["name": "bob", "editing": "t1"]]])

        cluster.node("n2").kill9()
        let killedAt = ContinuousClock.now
        let removed = try alice.receiveJSON(timeout: .seconds(15)) { $0["type"] == "presence_patch" }
        #expect(removed["ops"] == [["op": "remove", "path": .string("/" + bobID)]], "\(cluster.logs)")
        #expect(ContinuousClock.now - killedAt < .seconds(8), "a killed node's members leave after about 3 s of silence")
    }

    /// A person whose node dies comes back through another node before the dead node's member
    /// leaves: for those seconds the room lists two members of theirs, and everyone must still
    /// see each person once (a client's hello keeps who it is across connections).
    @Test func aPersonWhoseNodeDiedIsListedOnceWhileTheirOldMemberLingers() async throws {
        let cluster = try ClusterFixture()
        defer { cluster.stop() }
        var kimOptions = ClientOptions(url: cluster.urls(startingAt: "n1"))
        kimOptions.presence = ["name": "kim"]
        var leeOptions = ClientOptions(url: cluster.urls(startingAt: "n2"))
        leeOptions.presence = ["name": "lee"]
        leeOptions.reconnect.initialDelay = .milliseconds(50)
        leeOptions.reconnect.maximumDelay = .milliseconds(500)
        let kim = TetherClient(options: kimOptions), lee = TetherClient(options: leeOptions)
        try kim.connect()
        try lee.connect()
        let kimRoom = kim.room("todo:twice"), leeRoom = lee.room("todo:twice")
        try await eventually("both listed", timeout: .seconds(30)) { kimRoom.presentNames == ["kim", "lee"] && leeRoom.isSynced }
        var shown: [[String]] = []
        let watch = kimRoom.members.bind { _ in shown.append(kimRoom.presentNames) }
        defer { watch.cancel() }
        cluster.node("n2").kill9()
        try await eventually("lee is back through another node", timeout: .seconds(30)) {
            lee.connectionState.value.isConnected && kimRoom.members.dictionary.values.filter { $0.displayName == "lee" }.count == 2
        }
        try await eventually("the dead node's member left", timeout: .seconds(15)) {
            kimRoom.members.dictionary.values.filter { $0.displayName == "lee" }.count == 1
        }
        #expect(!shown.isEmpty && shown.allSatisfy { Set($0).count == $0.count }, "a name shown twice: \(shown)")
        await kim.close()
        await lee.close()
    }

    /// Reads `socket`'s presence frames into `members` until `done` holds; the time it took.
    static func follow(_ socket: RawWebSocket, _ members: inout Set<String>, timeout: Duration,
                       until done: (Set<String>) -> Bool) throws -> Duration {
        let start = ContinuousClock.now
        while !done(members) {
            let message = try socket.receiveJSON(timeout: max(.milliseconds(1), timeout - (.now - start))) {
                $0["type"] == "presence" || $0["type"] == "presence_patch"
            }
            if case .object(let all)? = message["members"] { members = Set(all.keys) }
            if case .array(let operations)? = message["ops"] {
                for operation in operations {
                    guard let path = operation["path"]?.stringValue, path.split(separator: "/").count == 1 else { continue }
                    let id = String(path.dropFirst())
                    if operation["op"] == "remove" { members.remove(id) } else { members.insert(id) }
                }
            }
        }
        return .now - start
    }

    /// Three nodes, a member on each: every node converges on all three, and when one node is
    /// killed the other two drop its member. The times are printed for docs/CLUSTER.md.
    @Test func membersOnThreeNodesConvergeAndAKilledNodesMemberLeavesEverywhere() throws {
        let names = ["n1", "n2", "n3"]
        let cluster = try ClusterFixture(nodes: names)
        defer { cluster.stop() }
        let sockets = try names.map { try RawWebSocket(port: cluster.node($0).port) }
        let ids = try sockets.map { try $0.receiveJSON()["session"]?.stringValue ?? "" }
        for (index, socket) in sockets.enumerated() {
            try socket.sendText(#"{"type":"join","room":"todo:three","id":1,"presence":{"name":"m\#(index)"}}"#)
        }
        let joinedAt = ContinuousClock.now
        var seen = Array(repeating: Set<String>(), count: sockets.count)
        for index in sockets.indices {
            _ = try Self.follow(sockets[index], &seen[index], timeout: .seconds(30)) { $0 == Set(ids) }
        }
        let converged = ContinuousClock.now - joinedAt
        #expect(converged < .seconds(10), "every node lists all three members within a few heartbeats")

        cluster.node("n3").kill9()
        let killedAt = ContinuousClock.now
        var leaveTimes: [Duration] = []
        for index in 0..<2 {
            _ = try Self.follow(sockets[index], &seen[index], timeout: .seconds(15)) { !$0.contains(ids[2]) }
            leaveTimes.append(ContinuousClock.now - killedAt)
            #expect(seen[index] == Set(ids[0..<2]), "\(cluster.logs)")
        }
        #expect(leaveTimes.allSatisfy { $0 < .seconds(8) }, "a killed node's members leave after about 3 s of silence")
        print("cluster presence: 3 nodes converged \(converged) after the joins; killed node's member gone on the others after \(leaveTimes)")
    }

    /// A spectator (`watchPresence`) sees the members of every node and is listed on none; the
    /// owner's ViewModel (`roster`, which lists every member) never sees it either.
    @Test func aSpectatorSeesTheMembersOfEveryNodeAndIsNeverListed() throws {
        let cluster = try ClusterFixture(nodes: ["n1", "n2"], arguments: ["--test-kinds"])
        defer { cluster.stop() }
        let room = "roster:spectated"
        let alice = try RawWebSocket(port: cluster.node("n1").port), bob = try RawWebSocket(port: cluster.node("n2").port)
        let screen = try RawWebSocket(port: cluster.node("n2").port)
        let aliceID = try alice.receiveJSON()["session"]?.stringValue ?? "", bobID = try bob.receiveJSON()["session"]?.stringValue ?? ""
        _ = try screen.receiveJSON()
        try screen.sendText(#"{"type":"join","room":"\#(room)","id":1,"watchPresence":true}"#)
        _ = try screen.receiveJSON(timeout: .seconds(30)) { $0["type"] == "ack" }
        try alice.sendText(#"{"type":"join","room":"\#(room)","id":1,"presence":{"name":"alice"}}"#)
        try bob.sendText(#"{"type":"join","room":"\#(room)","id":1,"presence":{"name":"bob"}}"#)
        var seen = Set<String>()
        _ = try Self.follow(screen, &seen, timeout: .seconds(15)) { $0 == [aliceID, bobID] }
        // A few heartbeats later the members still list only the two, on both nodes, and so
        // does the owner's ViewModel.
        var aliceSees = Set<String>()
        _ = try Self.follow(alice, &aliceSees, timeout: .seconds(15)) { $0 == [aliceID, bobID] }
        Thread.sleep(forTimeInterval: 2.5)
        try alice.sendText(#"{"type":"join","room":"\#(room)","id":2,"presence":{"name":"alice"}}"#)
        let fresh = try alice.receiveJSON(timeout: .seconds(10)) { $0["type"] == "presence" }
        #expect(fresh["members"]?.objectValue.map { Set($0.keys) } == [aliceID, bobID], "\(cluster.logs)")
        try screen.sendText(#"{"type":"join","room":"\#(room)","id":2}"#)
        let snapshot = try screen.receiveJSON(timeout: .seconds(10)) { $0["type"] == "snapshot" }
        #expect(snapshot["state"]?["here"] == ["alice", "bob"], "the owner's ViewModel lists the members only")
    }
}
