import Testing
@testable import TetherTransport

@Suite("HTTP request bodies, bounded")
struct HTTPBodyReaderTests {
    enum Event { case bytes(String), complete }

    static func run(contentLength: String?, maxBytes: Int = 8, _ events: [Event]) -> [HTTPBodyReader.Action] {
        var (reader, first) = HTTPBodyReader.start(contentLength: contentLength, maxBytes: maxBytes)
        return [first] + events.map { event in
            switch event {
            case .bytes(let text): reader.received(Array(text.utf8))
            case .complete: reader.completed()
            }
        }
    }

    @Test(arguments: [
        ("declared, in two pieces", "5", [Event.bytes("ab"), .bytes("cde"), .complete],
         [HTTPBodyReader.Action.wait, .wait, .wait, .dispatch(Array("abcde".utf8))]),
        ("declared empty", "0", [], [.dispatch([])]),
        ("declared over the bound: refused before a byte", "9", [.bytes("x"), .complete],
         [.refuse(status: 413, reason: "a request body holds at most 8 bytes"), .wait, .wait]),
        ("not a number", "five", [], [.refuse(status: 400, reason: "Content-Length is not a number")]),
        ("negative", "-1", [], [.refuse(status: 400, reason: "Content-Length is not a number")]),
        ("longer than declared", "2", [.bytes("abc")], [.wait, .refuse(status: 400, reason: "the body is longer than its Content-Length")]),
        ("shorter than declared", "4", [.bytes("ab"), .complete],
         [.wait, .wait, .refuse(status: 400, reason: "the body ended after 2 of its 4 bytes")]),
        ("no Content-Length: no body", nil, [], [.dispatch([])]),
        ("no Content-Length, bytes anyway: not read", nil, [.bytes("ab"), .complete], [.dispatch([]), .wait, .wait]),
    ] as [(String, String?, [Event], [HTTPBodyReader.Action])])
    func eachBodyIsReadWholeOrRefusedOnce(_ name: String, _ contentLength: String?, _ events: [Event], _ expected: [HTTPBodyReader.Action]) {
        #expect(Self.run(contentLength: contentLength, events) == expected, "\(name)")
    }

    /// Whatever the pieces, a body within its bound is dispatched exactly once, whole, and one
    /// past it is refused exactly once and never dispatched.
    @Test func anyPiecesGiveOneOutcome() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let size = Int.random(in: 0...12, using: &generator)
            let body = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var pieces: [[UInt8]] = []
            var rest = body[...]
            while !rest.isEmpty {
                let take = Int.random(in: 1...rest.count, using: &generator)
                pieces.append(Array(rest.prefix(take)))
                rest = rest.dropFirst(take)
            }
            let declared = String(size)
            var (reader, first) = HTTPBodyReader.start(contentLength: declared, maxBytes: 8)
            let actions = [first] + pieces.map { reader.received($0) } + [reader.completed()]
            let outcomes = actions.filter { $0 != .wait }
            #expect(outcomes.count == 1, "\(size) bytes in \(pieces.count) pieces, declared \(declared): \(outcomes)")
            #expect(outcomes.first == (size <= 8 ? .dispatch(body) : .refuse(status: 413, reason: "a request body holds at most 8 bytes")))
        }
    }
}
