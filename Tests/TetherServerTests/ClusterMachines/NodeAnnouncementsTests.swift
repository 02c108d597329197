import Testing
import TetherJSON
@testable import TetherServer

/// The announcements cluster presence and cluster viewers share, by a table of messages from
/// another node and what each changed.
@Suite("Cluster state machines: node announcements")
struct NodeAnnouncementsTests {
    typealias Announcements = NodeAnnouncements<Entry>

    struct Entry: Equatable {
        var id: String
        var value: Int
    }

    static func make(_ node: String) -> Announcements {
        Announcements(node: node, listKey: "entries", id: \.id, same: { $0 == $1 },
                      encode: { ["id": .string($0.id), "value": .int($0.value)] },
                      decode: { json in json["id"]?.stringValue.map { Entry(id: $0, value: json["value"]?.intValue ?? 0) } })
    }

    static func describe(_ result: (change: Announcements.Change, syncAsked: Bool)?) -> String {
        guard let (change, syncAsked) = result else { return "ignored" }
        let set = change.set.map { "\($0.id)=\($0.value)" }.joined(separator: ",")
        return "\(change.node): set [\(set)] removed [\(change.removed.sorted().joined(separator: ","))]\(syncAsked ? " sync" : "")"
    }

    @Test func messagesFromAnotherNodeChangeItsEntries() {
        var here = Self.make("n1"), there = Self.make("n2")
        let t0 = ContinuousClock.now
        let table: [(String, JSON, String)] = [
            ("a comes", there.set(Entry(id: "a", value: 1)), "n2: set [a=1] removed []"),
            ("a again, the same", there.set(Entry(id: "a", value: 1)), "n2: set [] removed []"),
            ("a changes", there.set(Entry(id: "a", value: 2)), "n2: set [a=2] removed []"),
            ("b comes", there.set(Entry(id: "b", value: 1)), "n2: set [b=1] removed []"),
            ("b goes", there.remove("b"), "n2: set [] removed [b]"),
            ("b goes again", there.remove("b"), "n2: set [] removed []"),
            ("the whole list: a as known, c new", there.heartbeat([Entry(id: "a", value: 2), Entry(id: "c", value: 3)])[0],
             "n2: set [c=3] removed []"),
            ("a list without a", there.heartbeat([Entry(id: "c", value: 3)])[0], "n2: set [] removed [a]"),
            ("asked for this node's list", there.sync, "n2: set [] removed [] sync"),
            ("this node's own message", here.set(Entry(id: "x", value: 1)), "ignored"),
        ]
        for (event, message, expected) in table {
            #expect(Self.describe(here.receive(message.encoded(), now: t0)) == expected, "\(event)")
        }
        #expect(here.remote["n2"]?.entries.keys.sorted() == ["c"])
        #expect(here.expire(now: t0 + .seconds(3)).isEmpty, "heard 3 s ago: not yet silent")
        let gone = here.expire(now: t0 + .milliseconds(3_001))
        #expect(gone.map(\.node) == ["n2"] && gone.first?.removed == ["c"])
        #expect(here.remote.isEmpty)
        #expect(there.heartbeat([]).isEmpty, "a node with nothing says nothing")
    }
}
