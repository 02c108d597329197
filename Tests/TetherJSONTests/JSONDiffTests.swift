import Testing
import TetherJSON
import TetherTestSupport

@Suite("JSON Patch between two documents")
struct JSONDiffTests {
    /// Property: the difference of any two documents, applied to the first, gives the second.
    @Test(arguments: [UInt64(1), 2, 3])
    func theDifferenceAppliedToTheFirstGivesTheSecond(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<2_000 {
            let old = JSON.random(using: &rng), new = JSON.random(using: &rng)
            var document = old
            let operations = JSONPatch.difference(from: old, to: new)
            try document.apply(operations)
            #expect(document == new, "seed \(seed): \(old) → \(new) by \(operations)")
            #expect(JSONPatch.difference(from: new, to: new).isEmpty)
        }
    }

    /// One item added or removed anywhere in a list is one operation, at its index.
    @Test func oneItemInOrOutOfAListIsOneOperation() throws {
        let items: [JSON] = ["a", "b", "c", "d"]
        for index in 0...items.count {
            var longer = items
            longer.insert("new", at: index)
            #expect(JSONPatch.difference(from: ["items": .array(items)], to: ["items": .array(longer)])
                    == [.add(path: try JSONPointer(parsing: "/items/\(index)"), value: "new")])
            #expect(JSONPatch.difference(from: ["items": .array(longer)], to: ["items": .array(items)])
                    == [.remove(path: try JSONPointer(parsing: "/items/\(index)"))])
        }
        #expect(JSONPatch.difference(from: ["votes": ["pizza": 2], "open": true], to: ["votes": ["pizza": 3]])
                == [.remove(path: try JSONPointer(parsing: "/open")), .replace(path: try JSONPointer(parsing: "/votes/pizza"), value: 3)])
    }
}
