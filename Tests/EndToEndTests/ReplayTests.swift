import Foundation
import Testing
import TetherBinding
import TetherClient
import TetherContract
import TetherDemoContracts
import TetherDemos
import TetherJSON
import TetherState
import TetherTestSupport
import TetherTesting

/// A room's history as a test: rooms driven by several clients on a real daemon, exported with
/// `tether export` and replayed by `RoomReplay` / `TestRoom.replay` against the ViewModels'
/// code; a changed ViewModel diverges at the step it changes; one that draws its own random
/// numbers is named not reproducible. And `tether fork`: a new room from an earlier version.
@Suite("End to end: exports replayed as tests, and forks", .serialized)
@MainActor
struct ReplayTests {
    /// Sends `actions` to `room` as `subject`, each numbered by the client.
    func act(_ daemon: Daemon, as subject: String, in room: String, _ actions: [(String, JSON)]) async throws {
        var options = ClientOptions(url: daemon.url, token: try HistoryTests.token(subject))
        options.reconnect.isEnabled = false
        let client = TetherClient(options: options)
        try client.connect()
        let mirror = client.room(room)
        try await eventually("\(subject) joined \(room)") { mirror.isSynced }
        for (action, args) in actions { _ = try await client.send(action, to: room, args: args) }
        await client.close()
    }

    func tether(_ daemon: Daemon, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let admin = try HistoryTests.token("ops", admin: true)
        return try runProgram(Daemon.executable("tether"), [arguments[0], "--url", daemon.url, "--token", admin] + arguments.dropFirst())
    }

    func export(_ daemon: Daemon, _ room: String, from: Int = 0) throws -> RoomExport {
        let file = Daemon.temporaryDirectory() + "-export.json"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let written = try tether(daemon, ["export", room, "--from", "\(from)", "--output", file])
        #expect(written.status == 0 && written.stdout.contains("written to \(file)"), "\(written)")
        return try RoomExport(contentsOf: file)
    }

    @Test func aVoteAndAToDoListReplayAsTheyRanAndABugDivergesAtItsAction() async throws {
        let directory = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var daemon = try Daemon(arguments: ["--auth-secret", HistoryTests.secret], dataDirectory: directory)
        try await act(daemon, as: "alice", in: "todo:replay", [("add", ["title": "milk"])])
        try await act(daemon, as: "bob", in: "todo:replay", [("add", ["title": "bread"])])
        try await act(daemon, as: "alice", in: "todo:replay", [("remove", ["id": "t1"])])
        try await act(daemon, as: "alice", in: "vote:replay", [("vote", ["option": "pizza"])])
        try await act(daemon, as: "bob", in: "vote:replay", [("vote", ["option": "salad"])])
        // Across a restart: history is the store's.
        _ = daemon.stop()
        daemon = try Daemon(arguments: ["--auth-secret", HistoryTests.secret], dataDirectory: directory)
        defer { _ = daemon.stop() }
        try await act(daemon, as: "carol", in: "todo:replay", [("add", ["title": "eggs"]), ("toggle", ["id": "t3"])])
        try await act(daemon, as: "carol", in: "vote:replay", [("vote", ["option": "pizza"])])
        try await act(daemon, as: "bob", in: "vote:replay", [("vote", ["option": "pizza"]), ("close", [:])])

        let todo = try export(daemon, "todo:replay")
        #expect(todo.steps.count == 5 && todo.steps.map { $0["viewer"]?.stringValue } == ["alice", "bob", "alice", "carol", "carol"], "\(todo.steps)")
        #expect(try RoomReplay.run(Todo.self, todo) == .reproduced(steps: 5))
        #expect(TestRoom<Todo>.replay(Todo.self, todo) == .reproduced(steps: 5))
        // Ids from the count, not the largest id: wrong from the first add after a removal.
        guard case .diverged(let divergence) = try RoomReplay.run(TodoNumberedByCount.self, todo) else {
            Issue.record("a changed ViewModel reproduced the history")
            return
        }
        #expect(divergence.version == 4 && divergence.step.hasPrefix(#"add {"title":"eggs"} by carol ("#), "\(divergence)")
        #expect(divergence.reason.contains(#""id":"t3""#) && divergence.reason.contains(#""id":"t2""#), "\(divergence.reason)")

        let vote = try export(daemon, "vote:replay")
        #expect(try RoomReplay.run(Vote.self, vote) == .reproduced(steps: 5), "\(vote.steps)")
        // From the middle: the state then, the ballots kept unpublished (stored state) included.
        let fromMiddle = try export(daemon, "vote:replay", from: 2)
        #expect(fromMiddle.stored?["choices"] == ["alice": "pizza", "bob": "salad"], "\(String(describing: fromMiddle.stored))")
        #expect(try RoomReplay.run(Vote.self, fromMiddle) == .reproduced(steps: 3))

        // A kind that keeps only digests cannot be exported: the refusal says how to opt in.
        try await act(daemon, as: "alice", in: "counter:replay", [("increment", ["by": 2])])
        let counter = try tether(daemon, ["export", "counter:replay", "--from", "0"])
        #expect(counter.status == 2 && counter.stderr.contains("keepingArgumentsInHistory()"), "\(counter)")
    }

    @Test func diceReplayFromTheirRecordedSeedsAndTimesAndOwnRandomNumbersAreNamed() async throws {
        let directory = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try Daemon(arguments: ["--auth-secret", HistoryTests.secret, "--test-kinds"], dataDirectory: directory)
        defer { _ = daemon.stop() }
        try await act(daemon, as: "alice", in: "dice", [("roll", [:]), ("roll", [:]), ("roll", [:])])
        let dice = try export(daemon, "dice")
        #expect(dice.steps.allSatisfy { $0["seed"]?.intValue != nil && $0["now"]?.intValue != nil }, "\(dice.steps)")
        #expect(try RoomReplay.run(Dice.self, dice) == .reproduced(steps: 3))
        guard case .notReproducible(let divergence) = try RoomReplay.run(DiceOfItsOwn.self, dice) else {
            Issue.record("dice drawing their own random numbers were not named")
            return
        }
        #expect(divergence.version == 1 && divergence.step.hasPrefix("roll by alice"), "\(divergence.step)")
    }

    @Test func aForkStartsFromTheStateAtItsVersionAndLeavesTheRoomAlone() async throws {
        let directory = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try Daemon(arguments: ["--auth-secret", HistoryTests.secret], dataDirectory: directory)
        defer { _ = daemon.stop() }
        try await act(daemon, as: "alice", in: "vote:lunch", [("vote", ["option": "pizza"]), ("vote", ["option": "salad"])])
        try await act(daemon, as: "bob", in: "vote:lunch", [("vote", ["option": "pizza"])])

        let forked = try tether(daemon, ["fork", "vote:lunch@1", "vote:lunch-again"])
        #expect(forked.status == 0 && forked.stdout.hasPrefix("vote:lunch-again made from vote:lunch at v1 (epoch "), "\(forked)")
        let shown = try tether(daemon, ["show", "vote:lunch-again", "--at", "0", "--json"])
        #expect(try JSON(parsing: shown.stdout)["state"]?["totals"] == ["pizza": 1, "noodles": 0, "salad": 0], "\(shown)")
        // Its stored ballots too: alice changing her mind moves her vote, as in the room then.
        try await act(daemon, as: "alice", in: "vote:lunch-again", [("vote", ["option": "noodles"])])
        let after = try tether(daemon, ["show", "vote:lunch-again", "--at", "1", "--json"])
        #expect(try JSON(parsing: after.stdout)["state"]?["totals"] == ["pizza": 0, "noodles": 1, "salad": 0], "\(after)")
        let original = try tether(daemon, ["show", "vote:lunch", "--at", "3", "--json"])
        #expect(try JSON(parsing: original.stdout)["state"]?["totals"] == ["pizza": 1, "noodles": 0, "salad": 1], "\(original)")

        let taken = try tether(daemon, ["fork", "vote:lunch@1", "vote:lunch-again"])
        #expect(taken.status == 2 && taken.stderr.contains("a room vote:lunch-again exists"), "\(taken)")
        let otherKind = try tether(daemon, ["fork", "vote:lunch@1", "todo:x"])
        #expect(otherKind.status == 2 && otherKind.stderr.contains("same kind"), "\(otherKind)")
        let future = try tether(daemon, ["fork", "vote:lunch@9", "vote:later"])
        #expect(future.status == 2 && future.stderr.contains("version 9 is not kept"), "\(future)")
    }
}

/// `Todo` with a bug: ids from the list's count, so an id repeats after a removal.
final class TodoNumberedByCount: ViewModel, TodoContract.Implementation {
    let items = ObservableList<TodoContract.Item>()
    init(context: ViewModelContext) {}
    static let actions = ActionTable(TodoContract.binding(TodoNumberedByCount.self))

    func add(title: String) throws { items.append(.init(id: "t\(items.count + 1)", title: title, done: false)) }
    func toggle(id: String) throws {
        guard let index = items.firstIndex(where: { $0.id == id }) else { throw TodoContract.Failure.noSuchItem }
        items.update(at: index) { $0.done.toggle() }
    }
    func rename(id: String, title: String) throws {}
    func remove(id: String) throws { items.removeAll { $0.id == id } }
    func clearCompleted() { items.removeAll { $0.done } }
}

/// `Dice` drawing its own random numbers instead of the context's.
final class DiceOfItsOwn: ViewModel {
    let rolls: ObservableList<Int>
    let rolledAt: Observable<Int>
    init(context: ViewModelContext) {
        rolls = context.list("rolls")
        rolledAt = context.property("rolledAt", 0)
    }
    static let actions = ActionTable<DiceOfItsOwn>().on("roll") { $0.rolls.append(Int.random(in: 1...1_000_000)) }
}
