import Testing
import TetherProtocol
import TetherJSON
import TetherTestSupport

@Suite("Protocol codec")
struct CodecTests {
    static let clientMessages: [ClientMessage] = [
        .join(room: "counter"),
        .join(room: "todo:team-a", id: 3, since: ResumePoint(epoch: "e1x", version: 42), token: "a.b.c"),
        .leave(room: "todo:team-a"),
        .leave(room: "x", id: 9),
        .action(room: "counter", name: "increment", args: ["by": 2], id: 7),
        .action(room: "login", name: "setEmail", args: ["value": "민수@example.com"], id: 8),
        .action(room: "counter", name: "reset", args: nil, id: -1),
        .join(room: "todo", id: 4, presence: ["name": "kim", "editing": "t3"]),
        .presence(room: "todo", data: ["name": "kim"], id: 5),
        .presence(room: "todo", data: [:]),
    ]

    static let serverMessages: [ServerMessage] = [
        .hello(protocolVersion: 1, server: "tetherd/1.0", session: "s-1"),
        .snapshot(room: "counter", epoch: "e", version: 0, state: ["count": 0]),
        .snapshot(room: "login", epoch: "e", version: 3, state: ["errorMessage": "6자리 이상 비밀번호를 입력해주세요.", "signedIn": false, "x": nil]),
        .patch(room: "todo", epoch: "e", from: 4, version: 5, operations: [
            .add(path: "/items/3", value: ["id": "a", "title": "t\"q\n", "done": false]),
            .remove(path: "/items/1"), .replace(path: "/items/2/done", value: true),
        ]),
        .patch(room: "r", epoch: "e", from: 1, version: 9, operations: []),
        .ack(id: 7, room: "counter", version: 5),
        .ack(id: 8, room: "todo", version: nil),
        .presence(room: "todo", version: 3, members: ["s1": ["user": "kim", "data": ["name": "kim"]]]),
        .presencePatch(room: "todo", from: 3, version: 4, operations: [.remove(path: "/s1"), .replace(path: "/s2/data", value: [:])]),
        .error(ProtocolError(.unknownAction, "unknown action \"fly\"", id: 7, room: "counter")),
        .error(ProtocolError(.badMessage, "not valid JSON")),
        .error(ProtocolError(.tooLarge, "the list is full", id: 4, room: "todo", reason: "full")),
        .description(id: 1, kinds: [KindDescription(name: "counter", scope: "shared", actions: [
            .init(name: "increment", arguments: [.init(name: "by", shape: .integer, isOptional: true)]), .init(name: "reset", arguments: []),
        ])]),
        .description(id: nil, kinds: [KindDescription(
            name: "tally", scope: "shared", actions: [.init(name: "reset", arguments: [])],
            schema: ["$schema": "https://json-schema.org/draft/2020-12/schema", "state": ["type": "object", "properties": ["count": ["type": "integer"]]]],
            fingerprint: "sha256:" + String(repeating: "0f", count: 32))]),
    ]

    @Test(arguments: clientMessages)
    func clientMessagesRoundTrip(_ message: ClientMessage) throws {
        let bytes = message.encoded()
        #expect(try ClientMessage.decode(bytes) == message)
        // And through the generic JSON value, as another language's client would see it.
        let json = try JSONParser().parse(bytes)
        #expect(json["type"]?.stringValue != nil)
        #expect(try ClientMessage(json: json) == message)
    }

    @Test(arguments: serverMessages)
    func serverMessagesRoundTrip(_ message: ServerMessage) throws {
        let bytes = message.encoded()
        #expect(try ServerMessage.decode(bytes) == message)
    }

    @Test func encodingIsTheDocumentedShape() throws {
        let ack = ServerMessage.ack(id: 7, room: "counter", version: 5).encoded()
        #expect(String(decoding: ack, as: UTF8.self) == #"{"type":"ack","id":7,"room":"counter","version":5}"#)
        let patch = ServerMessage.patch(room: "counter", epoch: "E", from: 4, version: 5, operations: [.replace(path: "/count", value: 5)]).encoded()
        #expect(String(decoding: patch, as: UTF8.self) == #"{"type":"patch","room":"counter","epoch":"E","from":4,"version":5,"ops":[{"op":"replace","path":"/count","value":5}]}"#)
        let refused = ServerMessage.error(ProtocolError(.invalidArgs, "count would overflow", id: 2, room: "counter", reason: "overflow")).encoded()
        #expect(String(decoding: refused, as: UTF8.self) == #"{"type":"error","code":"invalid_args","message":"count would overflow","id":2,"room":"counter","applied":false,"reason":"overflow"}"#)
        let plain = ServerMessage.error(ProtocolError(.invalidArgs, "bad", id: 2)).encoded()
        #expect(String(decoding: plain, as: UTF8.self) == #"{"type":"error","code":"invalid_args","message":"bad","id":2,"applied":false}"#, "no reason, no member")
        let hello = try JSONParser().parse(ServerMessage.hello(protocolVersion: 1, server: "s", session: "x").encoded())
        #expect(hello == ["type": "hello", "protocol": 1, "server": "s", "session": "x"])
    }

    @Test func mergedPatchFromPreEncodedRuns() throws {
        var first: [UInt8] = [], second: [UInt8] = []
        JSONPatch.writeOperations([.replace(path: "/a", value: 1)], to: &first)
        JSONPatch.writeOperations([.replace(path: "/a", value: 2), .add(path: "/b", value: "x")], to: &second)
        let merged = ServerMessage.encodePatch(room: "r", epoch: "e", from: 1, version: 3, encodedOperations: first + [UInt8(ascii: ",")] + second)
        #expect(try ServerMessage.decode(merged) == .patch(room: "r", epoch: "e", from: 1, version: 3, operations: [
            .replace(path: "/a", value: 1), .replace(path: "/a", value: 2), .add(path: "/b", value: "x"),
        ]))
    }

    @Test func unknownFieldsAreIgnored() throws {
        let text = #"{"type":"action","room":"counter","name":"increment","id":1,"extra":{"deep":[1,2]},"v":2}"#
        #expect(try ClientMessage.decode(Array(text.utf8)) == .action(room: "counter", name: "increment", args: nil, id: 1))
    }

    private func decodeError(_ bytes: [UInt8]) -> ProtocolError? {
        do {
            _ = try ClientMessage.decode(bytes)
            return nil
        } catch {
            return error
        }
    }

    private func decodeError(_ text: String) -> ProtocolError? { decodeError(Array(text.utf8)) }

    @Test(arguments: [
        ("not JSON", "hello", ErrorCode.badMessage),
        ("truncated", #"{"type":"join","room":"cou"#, .badMessage),
        ("empty", "", .badMessage),
        ("array", "[1,2]", .badMessage),
        ("no type", #"{"room":"counter"}"#, .badMessage),
        ("type not a string", #"{"type":5}"#, .badMessage),
        ("unknown type", #"{"type":"dance","room":"x"}"#, .badMessage),
        ("room not a string", #"{"type":"join","room":5}"#, .badMessage),
        ("missing room", #"{"type":"leave"}"#, .badMessage),
        ("id not an integer", #"{"type":"action","room":"r","name":"n","id":"7"}"#, .badMessage),
        ("fractional id", #"{"type":"action","room":"r","name":"n","id":1.5}"#, .badMessage),
        ("missing id", #"{"type":"action","room":"r","name":"n"}"#, .badMessage),
        ("since not an object", #"{"type":"join","room":"r","since":3}"#, .badMessage),
        ("since without epoch", #"{"type":"join","room":"r","since":{"version":3}}"#, .badMessage),
        ("since version a string", #"{"type":"join","room":"r","since":{"epoch":"e","version":"3"}}"#, .badMessage),
        ("token not a string", #"{"type":"join","room":"r","token":[]}"#, .badMessage),
        ("args not an object", #"{"type":"action","room":"r","name":"n","id":1,"args":[1]}"#, .invalidArgs),
        ("args a string", #"{"type":"action","room":"r","name":"n","id":1,"args":"x"}"#, .invalidArgs),
        ("number overflow", #"{"type":"join","room":"r","id":1e999}"#, .badMessage),
        ("huge integer id", #"{"type":"action","room":"r","name":"n","id":123456789012345678901234567890}"#, .badMessage),
        ("NaN", #"{"type":"join","room":NaN}"#, .badMessage),
        ("trailing garbage", #"{"type":"leave","room":"r"} x"#, .badMessage),
    ])
    func malformedInputMapsToTheRightCode(_ name: String, _ text: String, _ code: ErrorCode) {
        let error = decodeError(text)
        #expect(error?.code == code, "\(name): \(String(describing: error))")
        #expect(error?.message.isEmpty == false)
    }

    @Test func errorsCarryTheIdAndRoomWhenReadable() {
        let error = decodeError(#"{"type":"action","room":"counter","name":5,"id":12}"#)
        #expect(error?.id == 12)
        #expect(error?.room == "counter")
        #expect(error?.message.contains("\"name\"") == true)
    }

    @Test func deepNestingIsRejectedWithoutTrapping() {
        let depth = 10_000
        let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(decodeError(#"{"type":"action","room":"r","name":"n","id":1,"args":{"x":"# + arrays + "}}")?.code == .badMessage)
        let objects = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        #expect(decodeError(objects)?.code == .badMessage)
    }

    @Test func invalidUTF8IsRejected() {
        let prefix = Array(#"{"type":"join","room":""#.utf8), suffix = Array(#""}"#.utf8)
        for bad: [UInt8] in [[0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF8, 0x88, 0x80, 0x80, 0x80], [0x80]] {
            #expect(decodeError(prefix + bad + suffix)?.code == .badMessage, "\(bad)")
        }
    }

    /// Every prefix and random corruptions of valid messages decode or fail cleanly.
    @Test func truncationsAndMutationsNeverTrap() {
        var rng = SeededGenerator(seed: 2)
        for message in Self.clientMessages {
            let bytes = message.encoded()
            for end in 0..<bytes.count {
                #expect(decodeError(Array(bytes[..<end])) != nil, "prefix \(end) of \(message)")
            }
            for _ in 0..<200 {
                var mutated = bytes
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    mutated[Int.random(in: 0..<mutated.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                _ = decodeError(mutated)  // must simply return
            }
        }
        for message in Self.serverMessages {
            let bytes = message.encoded()
            for end in 0..<bytes.count {
                #expect(throws: ProtocolError.self) { try ServerMessage.decode(Array(bytes[..<end])) }
            }
        }
    }

    @Test func serverMessageErrors() {
        #expect(throws: ProtocolError.self) { try ServerMessage.decode(Array(#"{"type":"patch","room":"r","epoch":"e","from":1,"version":2,"ops":[{"op":"nope"}]}"#.utf8)) }
        #expect(throws: ProtocolError.self) { try ServerMessage.decode(Array(#"{"type":"error","code":"weird","message":"m"}"#.utf8)) }
    }
}
