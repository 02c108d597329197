import Testing
import TetherJSON
import TetherTestSupport

private func json(_ text: String) -> JSON {
    do { return try JSONParser().parse(text) } catch { fatalError("bad test JSON \(text): \(error)") }
}

@Suite("JSON Pointer (RFC 6901)")
struct JSONPointerTests {
    /// RFC 6901 section 5.
    @Test func rfcExamples() throws {
        let document = json(#"{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}"#)
        let cases: [(String, JSON)] = [
            ("", document), ("/foo", ["bar", "baz"]), ("/foo/0", "bar"), ("/", 0), ("/a~1b", 1),
            ("/c%d", 2), ("/e^f", 3), ("/g|h", 4), (#"/i\j"#, 5), (#"/k"l"#, 6), ("/ ", 7), ("/m~0n", 8),
        ]
        for (text, expected) in cases {
            let pointer = try JSONPointer(parsing: text)
            #expect(document.value(at: pointer) == expected, "\(text)")
            #expect(pointer.description == text, "round trip of \(text)")
        }
    }

    @Test func escapingOrderIsTildeFirst() throws {
        #expect(try JSONPointer(parsing: "/~01").tokens == ["~1"])  // not "/"
        #expect(JSONPointer(tokens: ["~1"]).description == "/~01")
        #expect(JSONPointer(tokens: ["a/b", "m~n"]).description == "/a~1b/m~0n")
    }

    @Test func malformedPointersAreRejected() {
        #expect(throws: JSONPointerError.missingLeadingSlash("foo")) { try JSONPointer(parsing: "foo") }
        #expect(throws: JSONPointerError.invalidEscape("/a~2")) { try JSONPointer(parsing: "/a~2") }
        #expect(throws: JSONPointerError.invalidEscape("/a~")) { try JSONPointer(parsing: "/a~") }
    }

    @Test func arrayIndexRules() {
        #expect(JSONPointer.arrayIndex("0") == 0)
        #expect(JSONPointer.arrayIndex("12") == 12)
        #expect(JSONPointer.arrayIndex("01") == nil)
        #expect(JSONPointer.arrayIndex("-") == nil)
        #expect(JSONPointer.arrayIndex("1e2") == nil)
        #expect(JSONPointer.arrayIndex("") == nil)
        #expect(JSONPointer.arrayIndex("99999999999999999999999") == nil)
    }

    @Test func overlapIsAncestorOrDescendant() {
        let items: JSONPointer = "/items"
        #expect(items.overlaps("/items/2/done"))
        #expect(JSONPointer("/items/2/done").overlaps(items))
        #expect(JSONPointer.root.overlaps(items))
        #expect(!items.overlaps("/itemsX"))
        #expect(!JSONPointer("/a/1").overlaps("/a/2"))
    }

    @Test func randomTokensRoundTrip() throws {
        var rng = SeededGenerator(seed: 6901)
        for _ in 0..<500 {
            let tokens = (0..<Int.random(in: 0...4, using: &rng)).map { _ in JSON.randomString(using: &rng) }
            let pointer = JSONPointer(tokens: tokens)
            #expect(try JSONPointer(parsing: pointer.description) == pointer)
        }
    }
}

@Suite("JSON Patch (RFC 6902)")
struct JSONPatchTests {
    private func patched(_ document: String, _ patch: String) throws -> JSON {
        var value = json(document)
        try value.apply(JSONPatch.decode(json(patch)))
        return value
    }

    /// RFC 6902 appendix A, the examples that succeed.
    @Test(arguments: [
        ("A.1", #"{"foo":"bar"}"#, #"[{"op":"add","path":"/baz","value":"qux"}]"#, #"{"baz":"qux","foo":"bar"}"#),
        ("A.2", #"{"foo":["bar","baz"]}"#, #"[{"op":"add","path":"/foo/1","value":"qux"}]"#, #"{"foo":["bar","qux","baz"]}"#),
        ("A.3", #"{"baz":"qux","foo":"bar"}"#, #"[{"op":"remove","path":"/baz"}]"#, #"{"foo":"bar"}"#),
        ("A.4", #"{"foo":["bar","qux","baz"]}"#, #"[{"op":"remove","path":"/foo/1"}]"#, #"{"foo":["bar","baz"]}"#),
        ("A.5", #"{"baz":"qux","foo":"bar"}"#, #"[{"op":"replace","path":"/baz","value":"boo"}]"#, #"{"baz":"boo","foo":"bar"}"#),
        ("A.6", #"{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}"#,
         #"[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]"#,
         #"{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}"#),
        ("A.7", #"{"foo":["all","grass","cows","eat"]}"#, #"[{"op":"move","from":"/foo/1","path":"/foo/3"}]"#,
         #"{"foo":["all","cows","eat","grass"]}"#),
        ("A.8", #"{"baz":"qux","foo":["a",2,"c"]}"#,
         #"[{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]"#,
         #"{"baz":"qux","foo":["a",2,"c"]}"#),
        ("A.10", #"{"foo":"bar"}"#, #"[{"op":"add","path":"/child","value":{"grandchild":{}}}]"#,
         #"{"foo":"bar","child":{"grandchild":{}}}"#),
        ("A.11", #"{"foo":"bar"}"#, #"[{"op":"add","path":"/baz","value":"qux","xyz":123}]"#, #"{"foo":"bar","baz":"qux"}"#),
        ("A.14", #"{"/":9,"~1":10}"#, #"[{"op":"test","path":"/~01","value":10}]"#, #"{"/":9,"~1":10}"#),
        ("A.16", #"{"foo":["bar"]}"#, #"[{"op":"add","path":"/foo/-","value":["abc","def"]}]"#, #"{"foo":["bar",["abc","def"]]}"#),
        ("copy", #"{"a":{"b":[1]}}"#, #"[{"op":"copy","from":"/a","path":"/c"}]"#, #"{"a":{"b":[1]},"c":{"b":[1]}}"#),
        ("add replaces member", #"{"a":1}"#, #"[{"op":"add","path":"/a","value":2}]"#, #"{"a":2}"#),
        ("replace root", #"{"a":1}"#, #"[{"op":"replace","path":"","value":[1]}]"#, "[1]"),
        ("number equality", #"{"n":1}"#, #"[{"op":"test","path":"/n","value":1.0}]"#, #"{"n":1}"#),
        ("object order", #"{"o":{"a":1,"b":2}}"#, #"[{"op":"test","path":"/o","value":{"b":2,"a":1}}]"#, #"{"o":{"a":1,"b":2}}"#),
    ])
    func appendixExamples(_ name: String, _ document: String, _ patch: String, _ expected: String) throws {
        #expect(try patched(document, patch) == json(expected), "\(name)")
    }

    /// RFC 6902 appendix A error cases and section 4's rules; the document must be unchanged.
    @Test(arguments: [
        ("A.9 test fails", #"{"baz":"qux"}"#, #"[{"op":"test","path":"/baz","value":"bar"}]"#, JSONPatchError.testFailed("/baz")),
        ("A.12 nonexistent target", #"{"foo":"bar"}"#, #"[{"op":"add","path":"/baz/bat","value":"qux"}]"#, .pathNotFound("/baz/bat")),
        ("A.13 duplicate op, last wins", #"{"foo":"bar"}"#, #"[{"op":"add","path":"/baz","value":"qux","op":"remove"}]"#, .pathNotFound("/baz")),
        ("A.15 string vs number", #"{"/":9,"~1":10}"#, #"[{"op":"test","path":"/~01","value":"10"}]"#, .testFailed("/~01")),
        ("remove missing", #"{"a":1}"#, #"[{"op":"remove","path":"/b"}]"#, .pathNotFound("/b")),
        ("replace missing", #"{"a":1}"#, #"[{"op":"replace","path":"/b","value":1}]"#, .pathNotFound("/b")),
        ("index past end", #"{"a":[1]}"#, #"[{"op":"add","path":"/a/2","value":1}]"#, .invalidArrayIndex("/a/2")),
        ("leading zero index", #"{"a":[1,2]}"#, #"[{"op":"remove","path":"/a/01"}]"#, .invalidArrayIndex("/a/01")),
        ("dash on remove", #"{"a":[1]}"#, #"[{"op":"remove","path":"/a/-"}]"#, .invalidArrayIndex("/a/-")),
        ("through a scalar", #"{"a":1}"#, #"[{"op":"add","path":"/a/b","value":1}]"#, .notAContainer("/a/b")),
        ("move into child", #"{"a":{"b":{}}}"#, #"[{"op":"move","from":"/a","path":"/a/b/c"}]"#, .moveIntoOwnChild(from: "/a", path: "/a/b/c")),
        ("copy missing", #"{"a":1}"#, #"[{"op":"copy","from":"/x","path":"/y"}]"#, .pathNotFound("/x")),
        ("remove root", #"{"a":1}"#, #"[{"op":"remove","path":""}]"#, .cannotRemoveRoot),
        ("atomic: earlier ops undone", #"{"a":[1,2],"b":{"c":1}}"#,
         #"[{"op":"add","path":"/a/0","value":0},{"op":"remove","path":"/b/c"},{"op":"move","from":"/a/2","path":"/b/d"},{"op":"replace","path":"/a/1","value":9},{"op":"add","path":"/b/x","value":1},{"op":"test","path":"/a/0","value":5}]"#,
         .testFailed("/a/0")),
    ])
    func errorCases(_ name: String, _ document: String, _ patch: String, _ expected: JSONPatchError) throws {
        var value = json(document)
        let operations = try JSONPatch.decode(json(patch))
        #expect(throws: expected, "\(name)") { try value.apply(operations) }
        #expect(value == json(document), "\(name): the document must be unchanged")
    }

    @Test(arguments: [
        (#"{"op":"add","path":"/a"}"#, "needs a \"value\""),
        (#"{"op":"jump","path":"/a"}"#, "unknown op"),
        (#"{"path":"/a"}"#, "without a string \"op\""),
        (#"{"op":"move","path":"/a"}"#, "needs a string \"from\""),
        (#"{"op":"remove","path":"a"}"#, "must be empty or start with /"),
        (#"[]"#, "an operation is an object"),
    ])
    func malformedOperationsAreRejected(_ text: String, _ fragment: String) {
        do {
            _ = try PatchOperation(json: json(text))
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.contains(fragment), "\(error)")
        }
    }

    @Test func writerMatchesGenericEncodingAndRoundTrips() throws {
        var rng = SeededGenerator(seed: 42)
        for _ in 0..<300 {
            let operation: PatchOperation
            let path = JSONPointer(tokens: (0..<Int.random(in: 0...3, using: &rng)).map { _ in JSON.randomKey(using: &rng) })
            let value = JSON.random(using: &rng, depth: 2)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: operation = .add(path: path, value: value)
            case 1: operation = .remove(path: path)
            case 2: operation = .replace(path: path, value: value)
            case 3: operation = .move(from: path.appending("m"), path: path)
            case 4: operation = .copy(from: path.appending("c"), path: path)
            default: operation = .test(path: path, value: value)
            }
            var written: [UInt8] = []
            operation.write(to: &written)
            #expect(written == operation.json.encoded(), "hand writer and generic writer agree")
            #expect(try PatchOperation(json: JSONParser().parse(written)) == operation)
        }
    }

    /// Random valid edits of random documents: applying must give what a direct edit gives, and
    /// a failing operation at the end must leave the document as it was.
    @Test func randomEditsApplyAndFailAtomically() throws {
        var rng = SeededGenerator(seed: 2026)
        for round in 0..<300 {
            var expected: JSON = .object(["root": JSON.random(using: &rng, depth: 3)])
            let original = expected
            var operations: [PatchOperation] = []
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                guard let (operation, result) = randomValidEdit(of: expected, using: &rng) else { continue }
                operations.append(operation)
                expected = result
            }
            var document = original
            try document.apply(operations)
            #expect(document == expected, "round \(round)")

            var failing = original
            #expect(throws: JSONPatchError.self) {
                try failing.apply(operations + [.test(path: "/root", value: .string("\u{0}never"))])
            }
            #expect(failing == original, "round \(round): failed patch must leave the document unchanged")
        }
    }

    /// Picks a random container in `document` and a valid edit of it, returning the operation
    /// and the document as it must be afterwards (computed without the patch code).
    private func randomValidEdit(of document: JSON, using rng: inout SeededGenerator) -> (PatchOperation, JSON)? {
        var containers: [(JSONPointer, JSON)] = []
        func collect(_ value: JSON, _ pointer: JSONPointer) {
            switch value {
            case .object(let o): containers.append((pointer, value)); for (k, v) in o { collect(v, pointer.appending(k)) }
            case .array(let a): containers.append((pointer, value)); for (i, v) in a.enumerated() { collect(v, pointer.appending(index: i)) }
            default: break
            }
        }
        collect(document, .root)
        guard let (pointer, container) = containers.randomElement(using: &rng) else { return nil }
        let value = JSON.random(using: &rng, depth: 2)
        var edited = container
        let operation: PatchOperation
        switch container {
        case .object(var object):
            let keys = Array(object.keys)
            if !keys.isEmpty, Bool.random(using: &rng), pointer != .root {
                let key = keys.randomElement(using: &rng)!
                if Bool.random(using: &rng) {
                    object[key] = nil
                    operation = .remove(path: pointer.appending(key))
                } else {
                    object[key] = value
                    operation = .replace(path: pointer.appending(key), value: value)
                }
            } else {
                let key = pointer == .root ? "root" : JSON.randomKey(using: &rng)
                object[key] = value
                operation = .add(path: pointer.appending(key), value: value)
            }
            edited = .object(object)
        case .array(var array):
            if !array.isEmpty, Bool.random(using: &rng) {
                let index = Int.random(in: 0..<array.count, using: &rng)
                array.remove(at: index)
                operation = .remove(path: pointer.appending(index: index))
            } else {
                let index = Int.random(in: 0...array.count, using: &rng)
                array.insert(value, at: index)
                operation = .add(path: pointer.appending(index == array.count - 1 && Bool.random(using: &rng) ? "-" : String(index)), value: value)
            }
            edited = .array(array)
        default:
            return nil
        }
        return (operation, replacing(pointer.tokens[...], in: document, with: edited))
    }

    private func replacing(_ tokens: ArraySlice<String>, in document: JSON, with value: JSON) -> JSON {
        guard let token = tokens.first else { return value }
        switch document {
        case .object(var object):
            object[token] = replacing(tokens.dropFirst(), in: object[token]!, with: value)
            return .object(object)
        case .array(var array):
            let index = Int(token)!
            array[index] = replacing(tokens.dropFirst(), in: array[index], with: value)
            return .array(array)
        default:
            fatalError("not a container")
        }
    }
}
