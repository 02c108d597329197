import Synchronization
import Testing
import TetherBinding
import TetherClient
import TetherJSON
import TetherProtocol
import TetherTestSupport

/// Predictions show an action's effect at once and go when it is answered (docs/CLIENTS.md,
/// "Prediction"); and, as a property over random faults, every action runs once, every `send`
/// ends once with the server's outcome, and the mirror ends equal to the server's state.
@Suite("Predictions, and actions that run once under faults", .serialized, .timeLimit(.minutes(2)))
@MainActor
struct PredictionTests {
    nonisolated static let hello = #"{"type":"hello","protocol":1,"server":"scripted","session":"s1"}"#

    /// A counter room `c` that keeps the numbers it ran, as tetherd does. `fault` says, for each
    /// first send of a number, what goes wrong; repeats are answered from the record.
    final class CounterServer: Sendable {
        enum Fault: Sendable { case none, holdAnswer, refuse, applyThenDrop, dropUnapplied, unknownApplied, unknownUnapplied }
        final class Model: Sendable {
            let state = Mutex<(count: Int, version: Int, outcomes: [Int: Int], runs: [Int: Int], held: [Int: Int])>((0, 0, [:], [:], [:]))
        }
        let model = Model()
        let scripted: ScriptedServer
        /// Drops the connection from inside the server's answer (set once the server exists).
        final class DropHook: Sendable {
            let drop = Mutex<(@Sendable () -> Void)?>(nil)
        }

        init(fault: @escaping @Sendable (Int) -> Fault) throws {
            let model = self.model
            let hook = DropHook()
            scripted = try ScriptedServer(greeting: [PredictionTests.hello]) { text in
                guard let frame = try? JSONParser().parse(text) else { return [] }
                let id = frame["id"]?.intValue ?? 0
                if frame["type"] == "join" {
                    let (count, version) = model.state.withLock { ($0.count, $0.version) }
                    return [#"{"type":"snapshot","room":"c","epoch":"E","version":\#(version),"state":{"count":\#(count)}}"#,
                            #"{"type":"ack","id":\#(id),"room":"c","version":\#(version)}"#]
                }
                guard frame["type"] == "action", let seq = frame["seq"]?.intValue else { return [] }
                // A refusal is the room's (it settles the number); "unknown" is the cluster's.
                let error = { (applied: String) in
                    #"{"type":"error","code":"\#(applied == "false" ? "invalid_args" : "unavailable")","message":"m","id":\#(id),"room":"c","applied":\#(applied)}"#
                }
                return model.state.withLock { state -> [String] in
                    if let version = state.outcomes[seq] {
                        return version < 0 ? [error("false")] : [#"{"type":"ack","id":\#(id),"room":"c","version":\#(version)}"#]
                    }
                    let isFirst = state.held[seq] == nil
                    let chosen = isFirst ? fault(seq) : (fault(seq) == .holdAnswer ? .holdAnswer : .none)
                    state.held[seq] = id
                    func apply() -> String {
                        state.count += 1
                        state.version += 1
                        state.runs[seq, default: 0] += 1
                        state.outcomes[seq] = state.version
                        return #"{"type":"patch","room":"c","epoch":"E","from":\#(state.version - 1),"version":\#(state.version),"ops":[{"op":"replace","path":"/count","value":\#(state.count)}]}"#
                    }
                    switch chosen {
                    case .none: let patch = apply(); return [patch, #"{"type":"ack","id":\#(id),"room":"c","version":\#(state.version)}"#]
                    case .holdAnswer: return []
                    case .refuse: state.outcomes[seq] = -1; return [error("false")]
                    case .applyThenDrop: let patch = apply(); hook.drop.withLock { $0 }?(); return [patch]
                    case .dropUnapplied: hook.drop.withLock { $0 }?(); state.held[seq] = nil; return []
                    case .unknownApplied: let patch = apply(); return [patch, error(#""unknown""#)]
                    case .unknownUnapplied: state.held[seq] = -1; return [error(#""unknown""#)]
                    }
                }
            }
            let scripted = self.scripted
            hook.drop.withLock { $0 = { scripted.dropAll() } }
        }

        var count: Int { model.state.withLock { $0.count } }
        var runs: [Int: Int] { model.state.withLock { $0.runs } }
        var heldRequest: Int? { model.state.withLock { $0.held.values.max() } }

        /// Answers the held action `seq` (request `id`) now: applied.
        func answerHeld(seq: Int, id: Int) {
            let frames: [String] = model.state.withLock { state in
                state.count += 1
                state.version += 1
                state.runs[seq, default: 0] += 1
                state.outcomes[seq] = state.version
                return [#"{"type":"patch","room":"c","epoch":"E","from":\#(state.version - 1),"version":\#(state.version),"ops":[{"op":"replace","path":"/count","value":\#(state.count)}]}"#,
                        #"{"type":"ack","id":\#(id),"room":"c","version":\#(state.version)}"#]
            }
            scripted.broadcast(frames)
        }

        /// Another client's change: the count moves by `by`.
        func othersChange(by step: Int) {
            let frames: [String] = model.state.withLock { state in
                state.count += step
                state.version += 1
                return [#"{"type":"patch","room":"c","epoch":"E","from":\#(state.version - 1),"version":\#(state.version),"ops":[{"op":"replace","path":"/count","value":\#(state.count)}]}"#]
            }
            scripted.broadcast(frames)
        }
    }

    static func increment(_ state: inout JSON) {
        state.set("/count", to: .int((state["count"]?.intValue ?? 0) + 1))
    }

    func open(_ server: CounterServer) async throws -> (TetherClient, RemoteRoom, Recorder) {
        var options = ClientOptions(url: server.scripted.url)
        options.reconnect.initialDelay = .milliseconds(10)
        options.reconnect.maximumDelay = .milliseconds(50)
        let client = TetherClient(options: options)
        try client.connect()
        let room = client.room("c")
        try await eventually("the room's state") { room.isSynced }
        let recorder = Recorder()
        room.observable("/count", as: Int.self).bind { recorder.values.append($0) }.store(in: recorder.bag)
        return (client, room, recorder)
    }

    final class Recorder {
        var values: [Int?] = []
        let bag = CancellableBag()
    }

    @Test func aPredictionShowsAtOnceAndTheAnswerReplacesItWithoutCountingTwice() async throws {
        let server = try CounterServer { seq in seq == 1 ? .holdAnswer : .none }
        defer { server.scripted.stop() }
        let (client, room, recorder) = try await open(server)
        let sent = Task { try await room.send("increment", predict: Self.increment) }
        try await eventually("the prediction shows") { room.state["count"] == 1 }
        #expect(room.serverState["count"] == 0)
        // Someone else adds 5: the prediction stays on top of the server's newest state.
        server.othersChange(by: 5)
        try await eventually("the prediction over the other's change") { room.state["count"] == 6 }
        let id = try #require(server.heldRequest)
        server.answerHeld(seq: 1, id: id)  // its patch, then its ack, in one write
        #expect(try await sent.value == 2)
        #expect(room.state == room.serverState && room.state["count"] == 6)
        #expect(recorder.values == [0, 1, 6], "shown once, never counted twice: \(recorder.values)")
        await client.close()
    }

    @Test func aRefusedActionsPredictionIsRolledBack() async throws {
        let server = try CounterServer { _ in .refuse }
        defer { server.scripted.stop() }
        let (client, room, recorder) = try await open(server)
        await #expect(throws: TetherClientError.self) { try await room.send("increment", predict: Self.increment) }
        #expect(room.state["count"] == 0 && room.state == room.serverState)
        #expect(recorder.values == [0, 1, 0], "\(recorder.values)")
        await client.close()
    }

    @Test func waitingPredictionsAreAppliedAgainOverAResyncSnapshot() async throws {
        let server = try CounterServer { _ in .holdAnswer }
        defer { server.scripted.stop() }
        let (client, room, _) = try await open(server)
        let first = Task { try? await room.send("increment", predict: Self.increment) }
        let second = Task { try? await room.send("increment", predict: Self.increment) }
        try await eventually("both predictions show") { room.state["count"] == 2 }
        server.othersChange(by: 10)
        server.scripted.dropAll()  // the rejoin's snapshot has count 10
        try await eventually("the predictions over the new snapshot") { room.serverState["count"] == 10 && room.state["count"] == 12 }
        await client.close()
        _ = await (first.value, second.value)
        #expect(room.state == room.serverState, "closing answered them: no prediction left")
    }

    /// The property: random faults on each action's first send (an answer lost with or without the
    /// action applied, "unknown" with or without it, a refusal), predictions on every action.
    /// Every action runs at most once (once unless refused), every `send` ends once, with the
    /// server's outcome, and the mirror ends equal to the server's state with no prediction left.
    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func everyActionRunsOnceUnderRandomFaults(seed: UInt64) async throws {
        let faults: [CounterServer.Fault] = [.none, .none, .none, .applyThenDrop, .dropUnapplied, .unknownApplied, .unknownUnapplied, .refuse]
        let choices = Mutex(SeededGenerator(seed: seed))
        let server = try CounterServer { _ in choices.withLock { faults[Int($0.next() % UInt64(faults.count))] } }
        defer { server.scripted.stop() }
        let (client, room, _) = try await open(server)
        let actionCount = 40
        var outcomes: [Int: Result<Int, TetherClientError>] = [:]
        var endings = 0
        var tasks: [Task<Void, Never>] = []
        for index in 0..<actionCount {
            tasks.append(Task {
                do {
                    outcomes[index] = .success(try await room.send("increment", predict: Self.increment))
                } catch let error as TetherClientError {
                    outcomes[index] = .failure(error)
                } catch {
                    Issue.record("\(error)")
                }
                endings += 1
            })
            if index % 5 == 4 { try await Task.sleep(for: .milliseconds(5)) }
        }
        for task in tasks { await task.value }
        #expect(endings == actionCount, "every send ends once (seed \(seed))")
        let refused = outcomes.values.filter { (try? $0.get()) == nil }.count
        for case .failure(let error) in outcomes.values {
            guard case .server(let refusal) = error else { Issue.record("not the server's outcome (seed \(seed)): \(error)"); continue }
            #expect(refusal.applied == .no, "seed \(seed)")
        }
        #expect(server.runs.values.allSatisfy { $0 == 1 }, "each number ran once (seed \(seed)): \(server.runs)")
        #expect(server.count == actionCount - refused, "seed \(seed)")
        try await eventually("the mirror reaches the server's state") { room.serverState["count"]?.intValue == server.count }
        #expect(room.state == room.serverState, "no prediction left after the answers (seed \(seed))")
        #expect(client.pendingActions.value.isEmpty)
        await client.close()
    }
}
