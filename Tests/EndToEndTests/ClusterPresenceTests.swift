import Foundation
import Testing
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
}
