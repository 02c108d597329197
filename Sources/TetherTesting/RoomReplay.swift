import Foundation
import Testing
import TetherContract
import TetherJSON
import TetherServer
import TetherState

/// Steps of a room's history written by `tether export` (`GET /rooms/{room}/export`): the
/// published and stored state at `from`, then each step with what made it and its patch.
public struct RoomExport: Sendable {
    public let room: String
    public let kind: String
    public let from: Int
    public let to: Int
    public let state: JSON
    public let stored: JSON?
    public let steps: [JSON]

    public init(json: JSON) throws {
        guard json["format"]?.stringValue == "tether-export/1" else {
            throw ReplayFileError("not a tether export (format tether-export/1): \(json["format"].map { String(decoding: $0.encoded(), as: UTF8.self) } ?? "no format")")
        }
        guard let room = json["room"]?.stringValue, let kind = json["kind"]?.stringValue, let from = json["from"]?.intValue,
              let to = json["to"]?.intValue, let state = json["state"], let steps = json["steps"]?.arrayValue else {
            throw ReplayFileError("an export has room, kind, from, to, state and steps")
        }
        (self.room, self.kind, self.from, self.to, self.state, self.steps) = (room, kind, from, to, state, steps)
        stored = json["stored"] == .null ? nil : json["stored"]
    }

    /// Reads a file `tether export --output FILE` wrote.
    public init(contentsOf path: String) throws {
        try self.init(json: JSONParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
    }
}

public struct ReplayFileError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// What replaying an export gave.
public enum ReplayOutcome: Equatable, Sendable, CustomStringConvertible {
    /// Every step produced the patch it had.
    case reproduced(steps: Int)
    /// The first step whose patch (or stored state) differs, the same in two replays: the code
    /// does something else now.
    case diverged(ReplayDivergence)
    /// Two replays of the same steps differed: the ViewModel reads the clock or random numbers
    /// other than through its context (`context.now`, `context.random`).
    case notReproducible(ReplayDivergence)

    public var description: String {
        switch self {
        case .reproduced(let steps): return "all \(steps) steps reproduced"
        case .diverged(let divergence): return "diverged at \(divergence)"
        case .notReproducible(let divergence):
            return "not reproducible: two replays differ at \(divergence). The ViewModel reads the clock or random numbers itself "
                + "(Date(), .random()): read context.now and context.random instead, which the history records"
        }
    }
}

public struct ReplayDivergence: Equatable, Sendable, CustomStringConvertible {
    public let version: Int
    /// The step as `tether history` would say it: `vote {"option":"pizza"} by alice`.
    public let step: String
    public let expected: [JSON]
    public let produced: [JSON]
    /// What differs, in words.
    public let reason: String

    public var description: String { "v\(version) (\(step)): \(reason)" }
}

/// Replays an export against a ViewModel's code: a fresh instance restored to the state at
/// `from`, then each step's presence changes, time and seed, and its action or timer tick, as
/// the room ran them; each step's patch must be the one recorded. Twice, to tell a code change
/// from a ViewModel that reads the clock or randomness itself.
public enum RoomReplay {
    public static func run<Model: ViewModel>(_ type: Model.Type, _ export: RoomExport,
                                             maxStateBytes: Int = ServerConfiguration().maxStateBytes) throws -> ReplayOutcome {
        let first = try replay(type, export, maxStateBytes: maxStateBytes)
        guard let divergence = first.divergence else { return .reproduced(steps: export.steps.count) }
        let second = try replay(type, export, maxStateBytes: maxStateBytes)
        if let index = first.produced.indices.first(where: { first.produced[$0] != second.produced[$0] }), index <= divergence.index {
            let step = export.steps[index]
            return .notReproducible(ReplayDivergence(version: step["version"]?.intValue ?? 0, step: describe(step), expected: first.produced[index],
                                                     produced: second.produced[index], reason: "one replay gave \(encode(first.produced[index])), the other \(encode(second.produced[index]))"))
        }
        return .diverged(divergence.divergence)
    }

    private struct Run {
        var produced: [[JSON]] = []
        var divergence: (index: Int, divergence: ReplayDivergence)?
    }

    private static func replay<Model: ViewModel>(_ type: Model.Type, _ export: RoomExport, maxStateBytes: Int) throws -> Run {
        let host = ViewModelKind(export.kind, scope: .shared, type).instantiate(room: export.room)
        try host.restore(from: export.state, stored: export.stored)
        _ = host.takeChanges()
        _ = host.takeStoredChanges()
        var stored = host.storedState
        var run = Run()
        for (index, step) in export.steps.enumerated() {
            let version = step["version"]?.intValue ?? 0
            for heard in step["heard"]?.arrayValue ?? [] {
                if let left = heard["left"]?.stringValue { host.presenceLeft(memberID: left) }
                if let member = heard["listed"], let id = member["id"]?.stringValue {
                    host.presenceChanged(PresenceMember(id: id, user: member["user"]?.stringValue ?? id, data: member["data"] ?? .object([:])))
                }
            }
            host.replayTurnInputs(TurnRecord(milliseconds: step["now"]?.intValue, seed: step["seed"]?.intValue.map(UInt64.init)))
            var failure: String?
            switch step["cause"]?.stringValue {
            case "action", "refused":
                let action = step["action"]?.stringValue ?? ""
                do {
                    try host.perform(action, args: step["args"], viewer: Viewer(id: step["viewer"]?.stringValue ?? ""))
                } catch {
                    failure = "\(error)"
                    host.takeBackTurn()
                }
            case "timer":
                let timer = step["timer"]?.intValue ?? 0
                guard host.timers.indices.contains(timer) else {
                    throw ReplayFileError("v\(version): \(Model.self) has \(host.timers.count) timer(s), the export ticks timer \(timer)")
                }
                host.timers[timer].tick()
            default:
                break  // presence (its changes came above), another node's viewers: no code runs
            }
            var operations: [PatchOperation] = []
            do { operations = try host.finishTurn(maxEncodedSize: maxStateBytes) } catch { failure = failure ?? "\(error)" }
            let produced = operations.map(\.json)
            run.produced.append(produced)
            guard run.divergence == nil else { continue }
            let expected = step["patch"]?.arrayValue ?? []
            var reason: String?
            if step["cause"] == "action", let failure {
                reason = "it applied then; now it fails: \(failure)"
            } else if produced != expected {
                reason = "the patch was \(encode(expected)), now \(encode(produced))"
            } else {
                do { try stored.apply(JSONPatch.decode(.array(step["storedPatch"]?.arrayValue ?? []))) } catch {
                    throw ReplayFileError("v\(version): its stored operations do not apply: \(error)")
                }
                _ = host.takeStoredChanges()
                // A cluster's log kept this step's stored changes with a later step's: compared there.
                if case .bool(true)? = step["storedLater"] { continue }
                if stored != host.storedState {
                    reason = "the stored state was \(encode(stored)), now \(encode(host.storedState))"
                }
            }
            if let reason {
                run.divergence = (index, ReplayDivergence(version: version, step: describe(step), expected: expected, produced: produced, reason: reason))
            }
        }
        return run
    }

    /// `vote {"option":"pizza"} by alice (c7#3)`, `timer 0`, `presence`.
    static func describe(_ step: JSON) -> String {
        var text: String
        switch step["cause"]?.stringValue {
        case "action", "refused":
            var args = step["args"]
            if case .null? = args { args = nil }
            if case .object(let fields)? = args, fields.isEmpty { args = nil }
            text = (step["action"]?.stringValue ?? "?") + (args.map { " " + encode($0) } ?? "")
            if step["cause"] == "refused" { text += " (refused)" }
        case "timer": text = "timer \(step["timer"]?.intValue ?? 0)"
        case let cause: text = cause ?? "unknown"
        }
        if let viewer = step["viewer"]?.stringValue {
            text += " by \(viewer)"
            if let client = step["client"]?.stringValue, let seq = step["seq"]?.intValue { text += " (\(client)#\(seq))" }
        }
        return text
    }

    private static func encode(_ json: JSON) -> String { String(decoding: json.encoded(), as: UTF8.self) }
    private static func encode(_ operations: [JSON]) -> String { encode(.array(operations)) }
}

extension TestRoom {
    /// Replays an export (`tether export`) against `Model`'s code and records an issue naming
    /// the first step that differs, or saying the ViewModel is not reproducible.
    @discardableResult
    public static func replay(_ type: Model.Type, _ export: RoomExport, sourceLocation: SourceLocation = #_sourceLocation) -> ReplayOutcome? {
        do {
            let outcome = try RoomReplay.run(type, export)
            if case .reproduced = outcome { return outcome }
            Issue.record(Comment(rawValue: "replaying \(export.room) from v\(export.from) to v\(export.to): \(outcome)"), sourceLocation: sourceLocation)
            return outcome
        } catch {
            Issue.record(Comment(rawValue: "\(export.room) cannot be replayed: \(error)"), sourceLocation: sourceLocation)
            return nil
        }
    }
}
