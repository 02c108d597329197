import Foundation
import Testing

@testable import TetherJSON

private struct Todo: Codable, Equatable {
    var id: String
    var title: String
    var done: Bool
    var tags: [String]
    var note: String?
}

private enum Priority: String, Codable, Equatable { case low, high }
private enum Level: Int, Codable, Equatable { case one = 1, two = 2 }

private enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rect(width: Int, height: Int)
    case empty
}

private struct Board: Codable, Equatable {
    var name: String
    var todos: [Todo]
    var byOwner: [String: [Todo]]
    var counts: [Int: Int]
    var priority: Priority
    var level: Level?
    var shapes: [Shape]
    var matrix: [[Double]]
    var optionalList: [Int?]
    var extra: JSON
    var maybeExtra: JSON?
}

private struct Widths: Codable, Equatable {
    var i: Int, i8: Int8, i16: Int16, i32: Int32, i64: Int64
    var u: UInt, u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64
    var f: Float, d: Double, b: Bool, s: String
}

private func decodingMessage(_ error: any Error) -> String {
    guard let error = error as? DecodingError else { return "not a DecodingError: \(error)" }
    switch error {
    case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
        return c.debugDescription
    @unknown default:
        return "\(error)"
    }
}

private func codingPath(_ error: any Error) -> String {
    guard let error = error as? DecodingError else { return "?" }
    switch error {
    case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c):
        return _renderCodingPath(c.codingPath)
    case .keyNotFound(let key, let c):
        return _renderCodingPath(c.codingPath + [key])
    @unknown default:
        return "?"
    }
}

private struct ByArgs: Decodable { var by: Int }

@Suite("JSONCoding")
struct JSONCodingTests {
    let encoder = JSONValueEncoder()
    let decoder = JSONValueDecoder()

    private var sampleBoard: Board {
        let a = Todo(id: "a", title: "Buy milk", done: false, tags: ["home"], note: nil)
        let b = Todo(id: "b", title: "한국어 😀", done: true, tags: [], note: "with \"quotes\"")
        return Board(
            name: "main", todos: [a, b], byOwner: ["ann": [a], "bo": [b, a]], counts: [1: 10, 2: 20],
            priority: .high, level: .two, shapes: [.circle(radius: 1.5), .rect(width: 2, height: 3), .empty],
            matrix: [[1, 2.5], [], [-0.25]], optionalList: [1, nil, 3],
            extra: ["anything": [1, "two", nil, ["deep": true]]], maybeExtra: nil)
    }

    @Test func encodesStructsToJSON() throws {
        let todo = Todo(id: "x", title: "T", done: false, tags: ["a", "b"], note: nil)
        let json = try encoder.encode(todo)
        // nil optionals are omitted (encodeIfPresent), as with Foundation.
        #expect(json == ["id": "x", "title": "T", "done": false, "tags": ["a", "b"]])
        #expect(json.jsonString == #"{"done":false,"id":"x","tags":["a","b"],"title":"T"}"#)
    }

    @Test func nestedRoundTrip() throws {
        let board = sampleBoard
        let json = try encoder.encode(board)
        #expect(json["counts"] == ["1": 10, "2": 20])
        #expect(json["priority"] == "high")
        #expect(json["level"] == 2)
        #expect(json["extra"] == ["anything": [1, "two", nil, ["deep": true]]])
        #expect(json["maybeExtra"] == nil)
        #expect(json["optionalList"] == [1, nil, 3])
        #expect(json["shapes"]?[0] == ["circle": ["radius": 1.5]])
        #expect(try decoder.decode(Board.self, from: json) == board)
        // Through bytes too.
        #expect(try decoder.decode(Board.self, from: JSON(parsing: json.encoded())) == board)
    }

    @Test func agreesWithFoundation() throws {
        let board = sampleBoard
        let foundationBytes = try JSONEncoder().encode(board)
        let ours = try encoder.encode(board)
        #expect(try JSONParser().parse(foundationBytes) == ours)
        #expect(try JSONDecoder().decode(Board.self, from: Data(ours.encoded())) == board)
    }

    @Test func jsonIsCodableWithFoundation() throws {
        var rng = JSONTestRNG(seed: 31)
        for _ in 0..<300 {
            let value = JSONFuzz.value(depth: 0, rng: &rng, maxDepth: 4, foundationSafe: true)
            let data = try JSONEncoder().encode(value)
            #expect(try JSONParser().parse(data) == value)
            #expect(try JSONDecoder().decode(JSON.self, from: data) == value)
            #expect(try JSONDecoder().decode(JSON.self, from: Data(value.encoded())) == value)
        }
        // Inside a Codable struct.
        struct Envelope: Codable, Equatable { var type: String; var state: JSON }
        let envelope = Envelope(type: "snapshot", state: ["count": 3, "items": [["id": "a"]], "pi": 3.25, "none": nil])
        let data = try JSONEncoder().encode(envelope)
        #expect(try JSONDecoder().decode(Envelope.self, from: data) == envelope)
        // Non-finite doubles encode as null, like the writer.
        #expect(String(decoding: try JSONEncoder().encode(JSON.array([.double(.nan)])), as: UTF8.self) == "[null]")
    }

    @Test func jsonPassesThroughUnchanged() throws {
        let raw: JSON = ["int": 1, "double": 1.0, "nan": .double(.nan), "nested": [["x": nil]]]
        // `.double(1.0)` stays a double (no re-encoding through Double/Int).
        let encoded = try encoder.encode(["payload": raw])
        guard case .double = encoded["payload"]?["double"] else {
            Issue.record("double was converted")
            return
        }
        #expect(try encoder.encode(raw).encoded() == raw.encoded())
        let decoded = try decoder.decode([String: JSON].self, from: encoded)
        #expect(decoded["payload"]?["nested"] == [["x": nil]])
        if case .double(let d) = decoded["payload"]?["nan"] { #expect(d.isNaN) } else { Issue.record("nan lost") }
        #expect(try decoder.decode(JSON.self, from: raw["nested"]!) == [["x": nil]])
    }

    @Test func allNumericWidths() throws {
        let value = Widths(
            i: Int.min, i8: -128, i16: Int16.max, i32: Int32.min, i64: Int64.max, u: 12, u8: 255, u16: UInt16.max,
            u32: UInt32.max, u64: UInt64(Int64.max), f: 0.1, d: -2.5e-8, b: true, s: "s")
        let json = try encoder.encode(value)
        #expect(json["i8"] == -128)
        #expect(json["u32"] == .int(Int(UInt32.max)))
        #expect(json["f"] == .double(0.1))  // the Float's short form, not 0.10000000149011612
        #expect(try decoder.decode(Widths.self, from: json) == value)
        // Top-level and unkeyed integers of every width.
        #expect(try encoder.encode(UInt8(7)) == 7)
        #expect(try encoder.encode([Int16(-3), 4]) == [-3, 4])
        #expect(try decoder.decode([UInt16].self, from: [1, 2.0]) == [1, 2])
        #expect(try decoder.decode(Int64.self, from: .double(-4)) == -4)
        #expect(try decoder.decode(Float.self, from: 2) == 2)
        #expect(try decoder.decode(Double.self, from: 2) == 2)
        // Beyond Int a double may be a rounded literal (9223372036854775809 reads as 2^63): refused,
        // as the encoder refuses a UInt64 past Int.max.
        #expect(throws: DecodingError.self) { try decoder.decode(UInt64.self, from: .double(1e19)) }
    }

    @Test func encodingErrors() {
        #expect(throws: EncodingError.self) { try encoder.encode(UInt64.max) }
        #expect(throws: EncodingError.self) { try encoder.encode([UInt(Int.max) + 1]) }
        #expect(throws: EncodingError.self) { try encoder.encode(["x": Double.nan]) }
        #expect(throws: EncodingError.self) { try encoder.encode(Float.infinity) }
        do {
            _ = try encoder.encode(["a": ["b": [1.0, Double.infinity]]])
            Issue.record("should have thrown")
        } catch let EncodingError.invalidValue(_, context) {
            #expect(_renderCodingPath(context.codingPath) == "a.b[1]")
            #expect(context.debugDescription == "inf cannot be encoded as a JSON number at a.b[1]")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func integralDoubleForIntAndIntForDouble() throws {
        struct Args: Decodable, Equatable { var n: Int; var x: Double }
        #expect(try decoder.decode(Args.self, from: ["n": 3.0, "x": 2]) == Args(n: 3, x: 2))
        #expect(try decoder.decode(Args.self, from: ["n": -0.0, "x": 1e300]) == Args(n: 0, x: 1e300))
    }

    @Test func typeMismatchMessages() {
        var args = decoder
        args.rootPath = ["args"]
        do {
            _ = try args.decode(ByArgs.self, from: ["by": "2"])
            Issue.record("should have thrown")
        } catch {
            #expect(decodingMessage(error) == "expected integer at args.by, got string")
            #expect(codingPath(error) == "args.by")
            guard case DecodingError.typeMismatch = error else {
                Issue.record("wrong kind: \(error)")
                return
            }
        }
        let cases: [(JSON, String, String)] = [
            (["by": 1.5], "expected integer at args.by, got 1.5", "args.by"),
            (["by": nil], "expected integer at args.by, got null", "args.by"),
            ([:], "missing field args.by", "args.by"),
            // Beyond 64 bits a number is parsed as a double (99999999999999999999 as 1e20), whose
            // digits are not what was sent.
            (["by": 1e30], "the number at args.by is too large for an integer (at most 9223372036854775807)", "args.by"),
            (["by": .double(1e20)], "the number at args.by is too large for an integer (at most 9223372036854775807)", "args.by"),
            (["by": -1e30], "the number at args.by is too small for an integer (at least -9223372036854775808)", "args.by"),
            // One past Int's ends rounds to them as a double (-2^63-1 to -2^63): refused, not changed.
            (try! JSONParser().parse(#"{"by": -9223372036854775809}"#), "the number at args.by is too small for an integer (at least -9223372036854775808)", "args.by"),
            (try! JSONParser().parse(#"{"by": 9223372036854775808}"#), "the number at args.by is too large for an integer (at most 9223372036854775807)", "args.by"),
            ([1], "expected object at args, got array", "args"),
            ("x", "expected object at args, got string", "args"),
        ]
        for (json, message, path) in cases {
            #expect(throws: DecodingError.self) { try args.decode(ByArgs.self, from: json) }
            do { _ = try args.decode(ByArgs.self, from: json) } catch {
                #expect(decodingMessage(error) == message)
                #expect(codingPath(error) == path)
            }
        }
        // Without a root path.
        do { _ = try decoder.decode(ByArgs.self, from: ["by": true]) } catch {
            #expect(decodingMessage(error) == "expected integer at by, got boolean")
        }
        do { _ = try decoder.decode(ByArgs.self, from: []) } catch {
            #expect(decodingMessage(error) == "expected object, got array")
        }
    }

    @Test func nestedErrorPaths() {
        let json: JSON = [
            "name": "main", "todos": [["id": "a", "title": "t", "done": false, "tags": []], ["id": "b", "title": 7, "done": false, "tags": []]],
        ]
        struct Partial: Decodable { var name: String; var todos: [Todo] }
        do { _ = try decoder.decode(Partial.self, from: json) } catch {
            #expect(decodingMessage(error) == "expected string at todos[1].title, got number")
            #expect(codingPath(error) == "todos[1].title")
        }
        do { _ = try decoder.decode([String: [Bool]].self, from: ["x": [true, "no"]]) } catch {
            #expect(decodingMessage(error) == "expected boolean at x[1], got string")
        }
        do { _ = try decoder.decode(Todo.self, from: ["id": "a", "title": "t", "done": false]) } catch {
            #expect(decodingMessage(error) == "missing field tags")
            guard case DecodingError.keyNotFound(let key, _) = error else {
                Issue.record("wrong kind")
                return
            }
            #expect(key.stringValue == "tags")
        }
        do { _ = try decoder.decode([Int8].self, from: [1, 300]) } catch {
            #expect(decodingMessage(error) == "number 300 at [1] does not fit in Int8")
        }
        // A UInt64 takes what JSON keeps exact: up to Int.max.
        #expect((try? decoder.decode(UInt64.self, from: .double(0x1p62))) == 1 << 62)
        let past = #expect(throws: DecodingError.self) { try decoder.decode(UInt64.self, from: JSONParser().parse("9223372036854775809")) }
        #expect(past.map(decodingMessage) == "the number is too large for an integer (at most 9223372036854775807)")
        do { _ = try decoder.decode(UInt.self, from: -1) } catch {
            #expect(decodingMessage(error) == "number -1 does not fit in UInt")
        }
        do { _ = try decoder.decode(Float.self, from: 1e300) } catch {
            #expect(decodingMessage(error) == "number 1e+300 does not fit in Float")
        }
        do { _ = try decoder.decode(Priority.self, from: "medium") } catch {
            #expect(error is DecodingError)
        }
        do { _ = try decoder.decode(String.self, from: nil) } catch {
            guard case DecodingError.valueNotFound = error else {
                Issue.record("null should be valueNotFound: \(error)")
                return
            }
        }
    }

    @Test func optionalsAndNulls() throws {
        struct Opt: Codable, Equatable { var a: Int?; var b: String?; var c: [Int?]? }
        #expect(try decoder.decode(Opt.self, from: [:]) == Opt(a: nil, b: nil, c: nil))
        #expect(try decoder.decode(Opt.self, from: ["a": nil, "b": "x", "c": [nil, 1]]) == Opt(a: nil, b: "x", c: [nil, 1]))
        #expect(try encoder.encode(Opt(a: 1, b: nil, c: [nil])) == ["a": 1, "c": [nil]])
        #expect(try decoder.decode(Int?.self, from: nil) == nil)
        #expect(try decoder.decode(Int?.self, from: 5) == 5)
        #expect(try encoder.encode(Int?.none) == nil)
        do { _ = try decoder.decode(Opt.self, from: ["a": "1"]) } catch {
            #expect(decodingMessage(error) == "expected integer at a, got string")
        }
    }

    @Test func unkeyedPastTheEnd() {
        struct Pair: Decodable {
            var x: Int, y: Int
            init(from decoder: any Decoder) throws {
                var c = try decoder.unkeyedContainer()
                x = try c.decode(Int.self)
                y = try c.decode(Int.self)
            }
        }
        do { _ = try decoder.decode([String: Pair].self, from: ["p": [1]]) } catch {
            #expect(decodingMessage(error) == "expected another element at p[1], but the array has only 1")
        }
        do { _ = try decoder.decode(Pair.self, from: []) } catch {
            #expect(decodingMessage(error) == "expected another element at index 0, but the array has only 0")
        }
    }

    @Test func manualContainersNestedAndSuper() throws {
        final class Base: Codable {
            var id: Int
            init(id: Int) { self.id = id }
        }
        final class Point: Codable, Equatable {
            static func == (a: Point, b: Point) -> Bool { a.x == b.x && a.tags == b.tags && a.base.id == b.base.id && a.inner == b.inner }
            var x: Int
            var tags: [String]
            var base: Base
            var inner: [Int]
            enum Keys: String, CodingKey { case x, meta, tags, inner }
            enum MetaKeys: String, CodingKey { case tags }
            init(x: Int, tags: [String], base: Base, inner: [Int]) {
                self.x = x
                self.tags = tags
                self.base = base
                self.inner = inner
            }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Keys.self)
                try c.encode(x, forKey: .x)
                var meta = c.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
                var tagList = meta.nestedUnkeyedContainer(forKey: .tags)
                for tag in tags { try tagList.encode(tag) }
                var list = c.nestedUnkeyedContainer(forKey: .inner)
                var sub = list.nestedUnkeyedContainer()
                for v in inner { try sub.encode(v) }
                var obj = list.nestedContainer(keyedBy: Keys.self)
                try obj.encode(true, forKey: .x)
                try base.encode(to: c.superEncoder())
                #expect(_renderCodingPath(meta.codingPath) == "meta")
                #expect(_renderCodingPath(tagList.codingPath) == "meta.tags")
                #expect(_renderCodingPath(sub.codingPath) == "inner[0]")
            }
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: Keys.self)
                x = try c.decode(Int.self, forKey: .x)
                let meta = try c.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
                var tagList = try meta.nestedUnkeyedContainer(forKey: .tags)
                var t: [String] = []
                while !tagList.isAtEnd { t.append(try tagList.decode(String.self)) }
                tags = t
                var list = try c.nestedUnkeyedContainer(forKey: .inner)
                #expect(list.count == 2)
                var sub = try list.nestedUnkeyedContainer()
                var values: [Int] = []
                while !sub.isAtEnd { values.append(try sub.decode(Int.self)) }
                inner = values
                let obj = try list.nestedContainer(keyedBy: Keys.self)
                #expect(try obj.decode(Bool.self, forKey: .x))
                #expect(list.isAtEnd)
                base = try Base(from: c.superDecoder())
            }
        }
        let point = Point(x: 1, tags: ["a", "b"], base: Base(id: 9), inner: [4, 5])
        let json = try encoder.encode(point)
        #expect(json == ["x": 1, "meta": ["tags": ["a", "b"]], "inner": [[4, 5], ["x": true]], "super": ["id": 9]])
        #expect(try decoder.decode(Point.self, from: json) == point)
        // Foundation agrees on the shape.
        #expect(try JSONParser().parse(JSONEncoder().encode(point)) == json)
    }

    @Test func emptyEncodableIsEmptyObject() throws {
        struct Nothing: Codable {}
        #expect(try encoder.encode(Nothing()) == [:])
        #expect(try encoder.encode([Nothing()]) == [[:]])
        _ = try decoder.decode(Nothing.self, from: [:])
    }

    @Test func userInfoReachesTheCoders() throws {
        let key = CodingUserInfoKey(rawValue: "flag")!
        struct Probe: Codable {
            var seen: Bool = false
            init() {}
            init(from decoder: any Decoder) throws { seen = decoder.userInfo[CodingUserInfoKey(rawValue: "flag")!] as? Bool ?? false }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.singleValueContainer()
                try c.encode(encoder.userInfo[CodingUserInfoKey(rawValue: "flag")!] as? Bool ?? false)
            }
        }
        var enc = JSONValueEncoder()
        enc.userInfo[key] = true
        #expect(try enc.encode([Probe()]) == [true])
        var dec = JSONValueDecoder()
        dec.userInfo[key] = true
        #expect(try dec.decode([Probe].self, from: [1]).first?.seen == true)
    }
}
