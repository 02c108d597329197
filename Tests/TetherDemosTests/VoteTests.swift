import Testing
import TetherDemoContracts
import TetherDemos
import TetherJSON
import TetherState
import TetherTesting

/// The vote room through `TestRoom`, watching two voters and a bystander: every turn states the
/// shared operations and each watched viewer's own ones.
@Suite("Vote (per-viewer values)")
struct VoteTests {
    let ana = Viewer(id: "ana", claims: ["sub": "ana"])
    let bo = Viewer(id: "bo", claims: ["sub": "bo"])
    let bystander = Viewer(id: "cy")

    @Test func eachVoterSeesTheirOwnChoiceAndEveryoneTheTotals() throws {
        let room = TestRoom(Vote.self)
        let shared: JSON = ["question": "Where do we eat?", "options": ["pizza", "noodles", "salad"],
                            "totals": ["pizza": 0, "noodles": 0, "salad": 0], "open": true, "ballots": nil, "voters": nil]
        #expect(room.watch(as: ana) == shared, "no mine before voting")
        room.watch(as: bo)
        room.watch(as: bystander)

        try room.send("vote", ["option": "pizza"], as: ana, produces: [.replace(path: "/totals/pizza", value: 1)],
                      views: [ana: [.add(path: "/mine", value: "pizza")]])
        try room.send("vote", ["option": "salad"], as: bo, produces: [.replace(path: "/totals/salad", value: 1)],
                      views: [bo: [.add(path: "/mine", value: "salad")]])
        // Changing one's mind moves the vote.
        try room.send("vote", ["option": "noodles"], as: ana,
                      produces: [.replace(path: "/totals/pizza", value: 0), .replace(path: "/totals/noodles", value: 1)],
                      views: [ana: [.replace(path: "/mine", value: "noodles")]])
        try room.send("vote", ["option": "noodles"], as: ana)  // the same choice again: nothing

        #expect(room.state(for: ana)["mine"] == "noodles")
        #expect(room.state(for: bo)["mine"] == "salad")
        #expect(room.state(for: bystander)["mine"] == nil, "nobody sees another's choice")
        #expect(room.state["ballots"] == .null, "the shared document names no voter while open")
        #expect(room.state["totals"] == ["pizza": 0, "noodles": 1, "salad": 1])
        #expect(room.stored == ["choices": ["ana": "noodles", "bo": "salad"], "names": [:]], "who chose what: stored, never published")
        #expect(room.version == 3)
    }

    /// After a restart during an open vote, the stored choices come back: a voter sees their own
    /// choice, and changing it moves their vote instead of adding one.
    @Test func anOpenVoteRestoredWithItsStoredStateKeepsEachVotersChoice() throws {
        let before = TestRoom(Vote.self)
        try before.send("vote", ["option": "pizza"], as: ana, produces: [.replace(path: "/totals/pizza", value: 1)])
        let room = TestRoom(Vote.self, restoring: before.state, stored: before.stored)
        #expect(room.watch(as: ana)["mine"] == "pizza")
        try room.send("vote", ["option": "salad"], as: ana,
                      produces: [.replace(path: "/totals/pizza", value: 0), .replace(path: "/totals/salad", value: 1)],
                      views: [ana: [.replace(path: "/mine", value: "salad")]])
    }

    @Test func closingPublishesTheBallotsAndStopsVoting() throws {
        let room = TestRoom(Vote.self)
        room.watch(as: ana)
        try room.send("vote", ["option": "pizza"], as: ana, produces: [.replace(path: "/totals/pizza", value: 1)],
                      views: [ana: [.add(path: "/mine", value: "pizza")]])
        try room.send("close", produces: [.replace(path: "/open", value: false), .replace(path: "/ballots", value: ["ana": "pizza"]),
                                          .replace(path: "/voters", value: [:])])
        room.send(VoteContract.vote, .init(option: "salad"), as: ana, fails: .closed)
        #expect(room.state(for: ana)["mine"] == "pizza", "still mine after closing")
        try room.send("reopen", produces: [.replace(path: "/ballots", value: nil), .replace(path: "/voters", value: nil),
                                           .replace(path: "/open", value: true)])
        try room.send("vote", ["option": "salad"], as: ana,
                      produces: [.replace(path: "/totals/pizza", value: 0), .replace(path: "/totals/salad", value: 1)],
                      views: [ana: [.replace(path: "/mine", value: "salad")]])
    }

    /// The ballots name voters by the name they were present with when they voted, even after
    /// they left; a voter without one stays unnamed.
    @Test func closingNamesTheVotersByTheirPresence() throws {
        let room = TestRoom(Vote.self)
        room.presence(PresenceMember(id: "s1", user: "ana", data: ["name": "Ana"]))
        try room.send("vote", ["option": "pizza"], as: ana, produces: [.replace(path: "/totals/pizza", value: 1)])
        room.leave(member: "s1")
        try room.send("vote", ["option": "salad"], as: bo, produces: [.replace(path: "/totals/salad", value: 1)])
        try room.send("close", produces: [.replace(path: "/open", value: false), .replace(path: "/ballots", value: ["ana": "pizza", "bo": "salad"]),
                                          .replace(path: "/voters", value: ["ana": "Ana"])])
    }

    @Test func aClosedVoteRestoredFromStorageKeepsEachVotersChoice() throws {
        let stored: JSON = ["question": "Where do we eat?", "options": ["pizza", "noodles", "salad"],
                            "totals": ["pizza": 1, "noodles": 0, "salad": 1], "open": false, "ballots": ["ana": "pizza", "bo": "salad"]]
        let room = TestRoom(Vote.self, restoring: stored)
        #expect(room.watch(as: bo)["mine"] == "salad")
        try room.send("reopen", produces: [.replace(path: "/ballots", value: nil), .replace(path: "/open", value: true)])
        #expect(room.state(for: bo)["mine"] == "salad", "the choices came back from the ballots")
    }

    @Test func badVotesAreRefused() {
        let room = TestRoom(Vote.self)
        room.send(VoteContract.vote, .init(option: "tacos"), as: ana, fails: .noSuchOption, message: "no option \"tacos\"; the options are pizza, noodles, salad")
        room.send(VoteContract.vote, .init(option: "pizza"), fails: .anonymous)
        room.send("vote", ["option": "pizza", "weight": 2], as: ana, fails: .invalidArgs("unknown field args.weight (known: option)"))
    }

    @Test func actionHandlersWithoutAViewerStillWork() throws {
        // The two-argument forms are unchanged: the counter ignores who sends.
        let room = TestRoom(Counter.self)
        try room.send("increment", ["by": 2], as: ana, produces: [.replace(path: "/count", value: 2)])
    }

    @Test func anUnassertedChangeOfAWatchedViewFailsTheTest() throws {
        let room = TestRoom(Vote.self)
        room.watch(as: ana)
        try withKnownIssue {
            try room.send("vote", ["option": "pizza"], as: ana, produces: [.replace(path: "/totals/pizza", value: 1)])
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains(#"changed what viewer "ana" sees by [{"op":"add","path":"/mine","value":"pizza"}]"#) }
        }
    }

    @Test func benchViewsChangesEveryViewersValueOnEveryTurn() throws {
        let room = TestRoom(BenchViews.self, room: "bench-views10")
        let anaGroup = try #require(room.watch(as: ana)["view"]?["group"])
        let boGroup = try #require(room.watch(as: bo)["view"]?["group"])
        #expect(room.state(for: ana)["view"] == ["group": anaGroup, "turn": 0])
        try room.send("set", ["key": "a", "value": 1], produces: [.add(path: "/fields/a", value: 1)],
                      views: [ana: [.replace(path: "/view", value: ["group": anaGroup, "turn": 1])],
                              bo: [.replace(path: "/view", value: ["group": boGroup, "turn": 1])]])
    }

    /// A per-viewer key may not be a shared key, in either order of declaration.
    final class Colliding: ViewModel {
        init(context: ViewModelContext) {
            _ = context.property("mine", 0)
            context.perViewer("mine") { viewer in viewer.id }
        }
        static let actions = ActionTable<Colliding>()
    }

    final class CollidingLater: ViewModel {
        init(context: ViewModelContext) {
            context.perViewer("mine") { viewer in viewer.id }
            _ = context.property("mine", 0)
        }
        static let actions = ActionTable<CollidingLater>()
    }

    @Test func aPerViewerKeyThatCollidesWithASharedKeyStopsAtTheDeclaration() async {
        await #expect(processExitsWith: .failure) {
            _ = ViewModelKind("colliding", scope: .shared, Colliding.self).instantiate(room: "colliding")
        }
        await #expect(processExitsWith: .failure) {
            _ = ViewModelKind("colliding", scope: .shared, CollidingLater.self).instantiate(room: "colliding")
        }
    }
}

