import TetherJSON
import TetherProtocol
import TetherTransport

/// `GET /rooms/{room}/export?from=V&to=W`: a stored room's steps after V up to W (default: its
/// version) with what a replay needs (`TestRoom.replay`): the published and the stored state at
/// V, and each step's provenance, patch and stored operations. For admins. Only kinds that keep
/// their actions' arguments can be exported: a digest replays nothing.
enum RoomExportAnswer {
    /// The format's name, in every export: a replay refuses others.
    static let format = "tether-export/1"
    /// At most this many steps in one export.
    static let maxSteps = 10_000

    /// On the room service's queue; a cluster node reads the room's log and answers later.
    static func answer(room: String, query: String?, rooms: RoomService, cluster: ClusterNode?, responder: @escaping @Sendable (HTTPResponse) -> Void) {
        guard let fromText = APIArguments.queryValue("from", in: query), let from = Int(fromText), from >= 0 else {
            return responder(APIError.response(ProtocolError(.badMessage, "from must be a version: GET /rooms/{room}/export?from=VERSION[&to=VERSION]", room: room)))
        }
        var to: Int?
        if let toText = APIArguments.queryValue("to", in: query) {
            guard let value = Int(toText) else {
                return responder(APIError.response(ProtocolError(.badMessage, "to must be a version, not \(toText)", room: room)))
            }
            guard value >= from else {
                return responder(APIError.response(ProtocolError(.badMessage, "to must be a version from \(from) on, not \(toText)", room: room), status: 422))
            }
            to = value
        }
        if let to, to - from > maxSteps { return responder(tooMany(room: room, from: from)) }
        if let cluster {
            let to = to
            return ClusterHistoryReader.entries(room: room, node: cluster) { read in
                switch read {
                case .success(let entries):
                    let newest = to ?? entries.last?.version ?? from
                    guard newest - from <= maxSteps else { return responder(tooMany(room: room, from: from)) }
                    responder(answer(room: room, from: from, to: to, ClusterHistoryReader.export(room: room, from: from, to: newest, entries)))
                case .failure(let error):
                    responder(APIError.response(ProtocolError(.unavailable, "cannot export \(room): \(error.reason)", room: room), status: 503))
                }
            }
        }
        guard let store = rooms.store else {
            return responder(APIError.response(ProtocolError(.unknownRoom, "this server keeps no history: it stores no rooms (--memory-only, or no --data)", room: room),
                                               status: 404))
        }
        do {
            var newest = from
            if let to { newest = to } else if let version = try store.history(room: room, before: nil, limit: 0)?.version { newest = version }
            guard newest - from <= maxSteps else { return responder(tooMany(room: room, from: from)) }
            responder(answer(room: room, from: from, to: to, try store.export(room: room, from: from, to: newest)))
        } catch {
            responder(APIError.response(ProtocolError(.unavailable, "cannot export \(room): \(error)", room: room), status: 503))
        }
    }

    private static func tooMany(room: String, from: Int) -> HTTPResponse {
        APIError.response(ProtocolError(.badMessage, "at most \(maxSteps) steps in one export: to must be at most \(from + maxSteps)", room: room), status: 422)
    }

    /// The answer for what was read from the store or the log.
    static func answer(room: String, from: Int, to: Int?, _ read: RoomExportRead) -> HTTPResponse {
        switch read {
        case .export(let export):
            if let unreplayable = export.steps.first(where: { !replayable($0.provenance) }) {
                let cause = unreplayable.provenance["cause"]?.stringValue ?? "unknown"
                let why = cause == "unknown" ? "was stored before history was recorded"
                    : unreplayable.provenance["heardDropped"] != nil ? "came after more presence changes than a step keeps (8 KiB of them)"
                    : "keeps its arguments as a digest: declare the kind with .keepingArgumentsInHistory() to export its actions"
                return APIError.response(ProtocolError(.badMessage, "version \(unreplayable.version) of \(room) cannot be replayed: it \(why)", room: room),
                                         status: 409)
            }
            return APIError.json(200, json(room: room, export))
        case .notKept(let oldest, let newest):
            return RoomHistoryAnswer.notKept(room: room, version: newest < (to ?? from) ? (to ?? from) : from, oldest: oldest, newest: newest)
        case .noRoom:
            return APIError.response(ProtocolError(.unknownRoom, "no stored room \(room)", room: room), status: 404)
        }
    }

    /// An action's step replays only with its arguments; one stored before history never.
    static func replayable(_ provenance: JSON) -> Bool {
        guard provenance["heardDropped"] == nil else { return false }
        switch provenance["cause"]?.stringValue {
        case "action", "refused": return provenance["args"] != nil
        case "unknown", nil: return false
        default: return true
        }
    }

    static func json(room: String, _ export: RoomExport) -> JSON {
        let steps: [JSON] = export.steps.map { step in
            var object = step.provenance.objectValue ?? [:]
            object["version"] = .int(step.version)
            object["patch"] = .array(step.operations)
            if !step.storedOperations.isEmpty { object["storedPatch"] = .array(step.storedOperations) }
            // A cluster's log keeps the stored changes of steps appended together as one: they come with the last.
            if step.storedLater { object["storedLater"] = true }
            return .object(object)
        }
        return ["format": .string(format), "room": .string(room), "kind": .string(export.kind), "epoch": .string(export.epoch),
                "from": .int(export.from), "to": .int(export.to), "state": export.state, "stored": export.stored ?? .null, "steps": .array(steps)]
    }
}
