import Foundation
import Testing
import TetherJSON
@testable import tether

/// `tether history`'s lines for people: version, time, who, what, the paths; the causes each
/// read as a newcomer would say them.
@Suite("tether history: the lines it prints")
struct HistoryCommandTests {
    static let answer: JSON = [
        "room": "vote:lunch", "epoch": "E", "version": 12, "oldest": 3,
        "steps": [
            ["version": 12, "cause": "action", "action": "vote", "viewer": "alice", "client": "c7", "seq": 42, "argsDigest": "ab12",
             "at": 1_764_000_000, "ops": 7, "paths": ["/a", "/b", "/c", "/d", "/e"]],
            ["version": 11, "cause": "timer", "timer": 0, "at": 1_764_000_000, "ops": 1, "paths": ["/left"]],
            ["version": 10, "cause": "refused", "action": "vote", "viewer": "bob", "args": ["option": "x"], "at": 1_764_000_000, "ops": 0, "paths": []],
            ["version": 9, "ops": 1, "paths": ["/n"], "cause": "unknown"],
        ],
    ]

    @Test func eachStepIsOneAlignedLineThenWhereTheHistoryStarts() {
        let lines = History.lines(Self.answer, timeZone: TimeZone(identifier: "UTC")!)
        #expect(lines == [
            "v12  2025-11-24 16:00:00  alice (c7#42)  vote args#ab12                 7 ops  /a /b /c /d /e …",
            "v11  2025-11-24 16:00:00  -              timer 0                        1 op  /left",
            "v10  2025-11-24 16:00:00  bob            vote {\"option\":\"x\"} (refused)  0 ops",
            "v9   -                    -              not recorded                   1 op  /n",
            "vote:lunch is at v12; versions from v3 are kept",
        ], "\(lines.joined(separator: "\n"))")
    }

    @Test func noMatchingStepSaysWhatIsKept() {
        let lines = History.lines(["room": "todo:a", "version": 5, "oldest": 1, "steps": []])
        #expect(lines == ["todo:a: no kept version matches (kept: v1 to v5)"])
    }

    @Test func aDiffNamesWhoMadeTheVersionsThenEachChange() throws {
        let old: JSON = ["votes": ["pizza": 2], "open": true, "names": ["ann"]]
        let new: JSON = ["votes": ["pizza": 3, "sushi": 1], "names": ["ann", "bo"]]
        let steps: [JSON] = [["version": 7, "viewer": "alice", "client": "c", "seq": 2], ["version": 6, "viewer": "bob"], ["version": 5, "viewer": "alice"]]
        let lines = Diff.lines(room: "vote:lunch", from: 4, to: 7, old: old, patch: JSONPatch.difference(from: old, to: new), steps: steps)
        #expect(lines == [
            "vote:lunch from v4 to v7: 3 versions, made by alice (2), bob (1)",
            "- /open",
            "+ /names/1  \"bo\"",
            "~ /votes/pizza  2 → 3",
            "+ /votes/sushi  1",
        ], "\(lines.joined(separator: "\n"))")
        #expect(Diff.lines(room: "a", from: 2, to: 2, old: old, patch: [], steps: []) == ["a from v2 to v2: 0 versions", "no change"])
    }
}
