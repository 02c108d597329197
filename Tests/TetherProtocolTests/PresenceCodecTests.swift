import Testing
import TetherJSON
import TetherProtocol

/// The presence messages' documented shapes (docs/PROTOCOL.md, Presence) and their errors.
@Suite("Presence codec")
struct PresenceCodecTests {
    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func encodingIsTheDocumentedShape() {
        #expect(Self.text(ClientMessage.join(room: "todo", id: 1, presence: ["name": "kim"]).encoded())
                == #"{"type":"join","room":"todo","id":1,"presence":{"name":"kim"}}"#)
        #expect(Self.text(ClientMessage.presence(room: "todo", data: ["editing": "t3"], id: 2).encoded())
                == #"{"type":"presence","room":"todo","data":{"editing":"t3"},"id":2}"#)
        #expect(Self.text(ServerMessage.presence(room: "todo", version: 3, members: ["s1": ["user": "kim", "data": [:]]]).encoded())
                == #"{"type":"presence","room":"todo","version":3,"members":{"s1":{"data":{},"user":"kim"}}}"#)
        #expect(Self.text(ServerMessage.presencePatch(room: "todo", from: 3, version: 4, operations: [.remove(path: "/s1")]).encoded())
                == #"{"type":"presence_patch","room":"todo","from":3,"version":4,"ops":[{"op":"remove","path":"/s1"}]}"#)
    }

    @Test func aSpectatorsJoinCarriesWatchPresence() throws {
        #expect(Self.text(ClientMessage.join(room: "todo", id: 1, watchPresence: true).encoded())
                == #"{"type":"join","room":"todo","id":1,"watchPresence":true}"#)
        #expect(try ClientMessage.decode(Array(#"{"type":"join","room":"todo","watchPresence":true}"#.utf8)) == .join(room: "todo", watchPresence: true))
        #expect(try ClientMessage.decode(Array(#"{"type":"join","room":"todo","watchPresence":false}"#.utf8)) == .join(room: "todo"))
        #expect(throws: ProtocolError(.badMessage, "field \"watchPresence\" must be a boolean, got string", id: 1, room: "todo")) {
            try ClientMessage.decode(Array(#"{"type":"join","room":"todo","id":1,"watchPresence":"yes"}"#.utf8))
        }
    }

    @Test func aJoinWithoutPresenceEncodesAsBefore() throws {
        #expect(Self.text(ClientMessage.join(room: "counter", id: 1).encoded()) == #"{"type":"join","room":"counter","id":1}"#)
        #expect(try ClientMessage.decode(Array(#"{"type":"join","room":"counter","presence":null}"#.utf8)) == .join(room: "counter"))
    }

    @Test(arguments: [
        (#"{"type":"join","room":"todo","id":1,"presence":"kim"}"#, "field \"presence\" must be an object, got string"),
        (#"{"type":"join","room":"todo","id":1,"presence":[1]}"#, "field \"presence\" must be an object, got array"),
        (#"{"type":"presence","room":"todo","id":1,"data":3}"#, "field \"data\" must be an object, got number"),
        (#"{"type":"presence","room":"todo","id":1}"#, "missing field \"data\" (an object)"),
    ])
    func badPresenceDataIsInvalidArgs(_ frame: String, _ message: String) {
        #expect(throws: ProtocolError(.invalidArgs, message, id: 1, room: "todo")) { try ClientMessage.decode(Array(frame.utf8)) }
    }

    @Test func aPresenceUpdateNeedsARoom() {
        #expect(throws: ProtocolError(.badMessage, "missing field \"room\"", id: 1)) {
            try ClientMessage.decode(Array(#"{"type":"presence","id":1,"data":{}}"#.utf8))
        }
    }

    @Test func aPresencePatchWithBadOperationsIsABadMessage() {
        #expect(throws: ProtocolError.self) {
            try ServerMessage.decode(Array(#"{"type":"presence_patch","room":"r","from":0,"version":1,"ops":[{"op":"fly"}]}"#.utf8))
        }
    }
}
