import Foundation
import Testing
import TetherJSON
import TetherProtocol
import TetherTestSupport

/// docs/PROTOCOL.md's example exchanges, replayed against a real tetherd: every `→` line is sent,
/// every `←` line must be what arrives, in order, and nothing else may arrive. The format is the
/// one the document explains under "How to read the examples".
@Suite("docs/PROTOCOL.md against a real tetherd", .serialized)
struct ProtocolDocumentTests {
    static let document = (try? Repository.text("docs/PROTOCOL.md")) ?? ""
    static let exchanges = (try? ProtocolExchange.all(in: document)) ?? []

    @Test("the document's exchanges parse, and there are plenty of them")
    func documentHasExchanges() throws {
        let exchanges = try ProtocolExchange.all(in: Self.document)
        #expect(exchanges.count >= 15, "only \(exchanges.count) example exchanges in docs/PROTOCOL.md")
        let sent = Set(exchanges.flatMap(\.steps).filter(\.isSent).compactMap { (try? JSON(parsing: $0.text))?["type"]?.stringValue })
        let received = Set(exchanges.flatMap(\.steps).filter { !$0.isSent }.compactMap { (try? JSON(parsing: $0.text))?["type"]?.stringValue })
        #expect(sent.isSuperset(of: ["join", "leave", "action", "describe", "presence"]), "client messages shown: \(sent.sorted())")
        #expect(received == ["hello", "snapshot", "patch", "ack", "description", "error", "presence", "presence_patch"], "server messages shown: \(received.sorted())")
    }

    @Test("the error table names every error code the server has")
    func errorTableIsComplete() {
        let section = Self.document.components(separatedBy: "\n## Errors\n").dropFirst().first ?? ""
        for code in ErrorCode.allCases {
            #expect(section.contains("\n| `\(code.rawValue)` |"), "docs/PROTOCOL.md's error table lacks \(code.rawValue)")
        }
    }

    @Test("each exchange happens exactly as written", arguments: exchanges)
    func exchangeHappensAsWritten(_ exchange: ProtocolExchange) throws {
        let daemon = try Daemon(arguments: ["--memory-only"] + exchange.serverArguments)
        defer { daemon.stop() }
        var replay = Replay(port: daemon.port)
        for step in exchange.steps {
            do {
                try replay.perform(step)
            } catch {
                Issue.record("docs/PROTOCOL.md line \(step.line): \(error)")
                return
            }
        }
        for (client, socket) in replay.sockets.sorted(by: { $0.key < $1.key }) {
            // Nothing may arrive that the example does not show.
            if let extra = try? socket.receiveJSON(timeout: .milliseconds(300)) {
                Issue.record("docs/PROTOCOL.md line \(exchange.line): client \(client.isEmpty ? "(the only one)" : client) also got \(extra.encodedString)")
            }
        }
    }
}

/// One fenced block of docs/PROTOCOL.md holding `→`/`←` lines.
struct ProtocolExchange: Sendable, CustomTestStringConvertible {
    /// The document's line of the block's opening fence.
    let line: Int
    /// From a `$ tetherd …` line.
    var serverArguments: [String] = []
    var steps: [Step] = []

    struct Step: Sendable {
        let line: Int
        /// "" when the example has one client, else its letter.
        let client: String
        let isSent: Bool
        var text: String
    }

    var testDescription: String { "the example at line \(line)" }

    /// `→ TEXT`, `← TEXT`, or either after a client's letter (`A → TEXT`).
    static func exchangeLine(_ line: Substring) -> (client: String, isSent: Bool, text: String)? {
        var rest = line
        var client = ""
        if let letter = rest.first, letter.isUppercase, letter.isASCII, rest.dropFirst().first == " " {
            client = String(letter)
            rest = rest.dropFirst(2)
        }
        for (arrow, isSent) in [("→ ", true), ("← ", false)] where rest.hasPrefix(arrow) {
            return (client, isSent, String(rest.dropFirst(arrow.count)))
        }
        return nil
    }

    /// Every fenced block with at least one `→` or `←` line; any line in it that is not one of
    /// the format's lines is an error, so a typo can't hide a line from the test.
    static func all(in markdown: String) throws -> [ProtocolExchange] {
        var exchanges: [ProtocolExchange] = []
        var block: (line: Int, lines: [(Int, Substring)])?
        for (index, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") {
                if let open = block {
                    if open.lines.contains(where: { exchangeLine($0.1) != nil }) {
                        exchanges.append(try parse(open.lines, openedAt: open.line))
                    }
                    block = nil
                } else {
                    block = (index + 1, [])
                }
            } else {
                block?.lines.append((index + 1, line))
            }
        }
        return exchanges
    }

    private static func parse(_ lines: [(Int, Substring)], openedAt line: Int) throws -> ProtocolExchange {
        var exchange = ProtocolExchange(line: line)
        for (number, text) in lines {
            if text.trimmingCharacters(in: .whitespaces).isEmpty || text.hasPrefix("#") { continue }
            if text.hasPrefix("$ tetherd") {
                exchange.serverArguments = text.dropFirst("$ tetherd".count).split(separator: " ").map(String.init)
            } else if text.first == " ", !exchange.steps.isEmpty {
                exchange.steps[exchange.steps.count - 1].text += text.trimmingCharacters(in: .whitespaces)
            } else if let step = exchangeLine(text) {
                exchange.steps.append(Step(line: number, client: step.client, isSent: step.isSent, text: step.text))
            } else {
                throw ExampleError("line \(number) is not an exchange line: \(text)")
            }
        }
        return exchange
    }
}

/// Plays one exchange: a connection per client, opened at its first line, and the values the
/// server chose (`"…"` in the document) remembered for the lines that send them back.
private struct Replay {
    static let anyValue = JSON.string("…")

    let port: Int
    var sockets: [String: RawWebSocket] = [:]
    /// Values that matched `"…"`, by member name and by room and member name.
    var chosen: [String: JSON] = [:]
    /// Each client's session id from its `hello`: `…A` in a key or string of a `←` line.
    var sessions: [String: String] = [:]

    init(port: Int) { self.port = port }

    mutating func perform(_ step: ProtocolExchange.Step) throws {
        let parsed = try? JSON(parsing: step.text)
        let socket = try connection(step.client, showsHello: !step.isSent && parsed?["type"] == "hello")
        if step.isSent {
            guard let parsed else {
                try socket.sendText(step.text)  // deliberately not JSON
                return
            }
            try socket.send(json: filledIn(parsed, key: nil, room: parsed["room"]?.stringValue))
        } else {
            guard let expected = parsed else { throw ExampleError("a ← line must hold JSON: \(step.text)") }
            let received: JSON
            do {
                received = try socket.receiveJSON(timeout: .seconds(5))
            } catch {
                throw ExampleError("expected \(step.text), got nothing (\(error))")
            }
            if received["type"] == "hello", let session = received["session"]?.stringValue { sessions[step.client] = session }
            var mismatches: [String] = []
            compare(withSessions(expected), received, at: "", key: nil, room: received["room"]?.stringValue, mismatches: &mismatches)
            if !mismatches.isEmpty {
                throw ExampleError("expected \(step.text)\n  got \(received.encodedString)\n  (\(mismatches.joined(separator: "; ")))")
            }
        }
    }

    /// The client's connection; a new one reads its `hello` unless the example shows it.
    private mutating func connection(_ client: String, showsHello: Bool) throws -> RawWebSocket {
        if let socket = sockets[client] { return socket }
        let socket = try RawWebSocket(port: port)
        sockets[client] = socket
        if !showsHello {
            let hello = try socket.receiveJSON()
            guard hello["type"] == "hello" else { throw ExampleError("a connection's first message was \(hello.encodedString), not hello") }
            sessions[client] = hello["session"]?.stringValue
        }
        return socket
    }

    /// `expected` with `…A` (an ellipsis and a client's letter) in keys and strings replaced by
    /// that client's session id (presence member ids).
    private func withSessions(_ expected: JSON) -> JSON {
        func replaced(_ text: String) -> String {
            var text = text
            for (client, session) in sessions where !client.isEmpty { text = text.replacingOccurrences(of: "…" + client, with: session) }
            return text
        }
        switch expected {
        case .string(let text): return .string(replaced(text))
        case .object(let members): return .object(Dictionary(members.map { (replaced($0.key), withSessions($0.value)) }, uniquingKeysWith: { first, _ in first }))
        case .array(let items): return .array(items.map(withSessions))
        default: return expected
        }
    }

    private mutating func compare(_ expected: JSON, _ actual: JSON, at path: String, key: String?, room: String?, mismatches: inout [String]) {
        if expected == Self.anyValue, let key {
            chosen[key] = actual
            if let room { chosen[room + "\u{0}" + key] = actual }
            return
        }
        switch (expected, actual) {
        case (.object(let want), .object(let got)):
            for name in Set(want.keys).union(got.keys).sorted() {
                guard let wanted = want[name] else { mismatches.append("unexpected \(path)/\(name)"); continue }
                guard let value = got[name] else { mismatches.append("missing \(path)/\(name)"); continue }
                compare(wanted, value, at: "\(path)/\(name)", key: name, room: room, mismatches: &mismatches)
            }
        case (.array(let want), .array(let got)) where want.count == got.count:
            for (index, pair) in zip(want, got).enumerated() {
                compare(pair.0, pair.1, at: "\(path)/\(index)", key: key, room: room, mismatches: &mismatches)
            }
        default:
            if expected != actual { mismatches.append("\(path.isEmpty ? "the message" : path) differs") }
        }
    }

    /// `message` with each `"…"` replaced by what the server gave for that member (of that room).
    private func filledIn(_ message: JSON, key: String?, room: String?) throws -> JSON {
        switch message {
        case Self.anyValue:
            guard let key, let value = room.flatMap({ chosen[$0 + "\u{0}" + key] }) ?? chosen[key] else {
                throw ExampleError("\"…\" at \(key ?? "?") refers to no value the server sent before")
            }
            return value
        case .object(let members):
            return .object(try members.reduce(into: [:]) { $0[$1.key] = try filledIn($1.value, key: $1.key, room: room) })
        case .array(let items):
            return .array(try items.map { try filledIn($0, key: key, room: room) })
        default:
            return message
        }
    }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

private extension JSON {
    var encodedString: String { String(decoding: encoded(), as: UTF8.self) }
}
