import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// Presence across two tetherd nodes on a NATS cluster: members on one node are seen on the
/// other, and a killed node's members leave within a bounded time (heartbeat silence).
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
}
