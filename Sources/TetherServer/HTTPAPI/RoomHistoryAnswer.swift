import TetherJSON
import TetherProtocol
import TetherTransport

/// `GET /rooms/{room}/history`: a stored room's steps that its store still holds, newest first:
/// each version with what made it, who and when, and the paths its operations touched. For
/// admins (as `GET /rooms`). The ops are the shared document's: stored state and per-viewer
/// values never appear. Query: `limit` (100, at most 1,000), `before` (a version), `viewer`,
/// `action`, `patch=true` (each step's operations too).
enum RoomHistoryAnswer {
    static let defaultLimit = 100
    static let maxLimit = 1_000
    /// The paths listed per step; `ops` counts them all.
    static let pathsShown = 5

    struct Query: Equatable {
        var limit = RoomHistoryAnswer.defaultLimit
        var before: Int?
        var viewer: String?
        var action: String?
        /// Each step's whole patch, as clients got it (`patch`), beside its paths.
        var patches = false
    }

    /// The query, or the error naming what is wrong with it.
    static func query(_ text: String?) -> Result<Query, ProtocolError> {
        var query = Query()
        if let limit = APIArguments.queryValue("limit", in: text) {
            guard let value = Int(limit), (1...maxLimit).contains(value) else {
                return .failure(ProtocolError(.badMessage, "limit must be a number from 1 to \(maxLimit), not \(limit)"))
            }
            query.limit = value
        }
        if let before = APIArguments.queryValue("before", in: text) {
            guard let value = Int(before), value > 0 else { return .failure(ProtocolError(.badMessage, "before must be a version, not \(before)")) }
            query.before = value
        }
        query.viewer = APIArguments.queryValue("viewer", in: text).flatMap { $0.isEmpty ? nil : $0 }
        query.action = APIArguments.queryValue("action", in: text).flatMap { $0.isEmpty ? nil : $0 }
        if let patch = APIArguments.queryValue("patch", in: text) {
            guard patch == "true" || patch == "false" else { return .failure(ProtocolError(.badMessage, "patch must be true or false, not \(patch)")) }
            query.patches = patch == "true"
        }
        return .success(query)
    }

    /// On the room service's queue: reads wait for the store's writes before them. A cluster
    /// node reads the room's log instead (`ClusterHistoryReader`) and answers later.
    static func answer(room: String, query text: String?, rooms: RoomService, cluster: ClusterNode?,
                       responder: @escaping @Sendable (HTTPResponse) -> Void) {
        let query: Query
        switch Self.query(text) {
        case .success(let parsed): query = parsed
        case .failure(var error):
            error.room = room
            return responder(APIError.response(error))
        }
        if let cluster { return ClusterHistoryReader.read(room: room, node: cluster) { responder(answer(room: room, $0, query: query)) } }
        guard let store = rooms.store else {
            return responder(noHistory(room))
        }
        do {
            // Filters apply to what is kept (at most --history-max-patches and a snapshot's worth).
            let filtered = query.viewer != nil || query.action != nil
            let history = try store.history(room: room, before: query.before, limit: filtered ? Int.max : query.limit)
            responder(answer(room: room, .success(history), query: query))
        } catch {
            responder(answer(room: room, .failure(StoreReadError(reason: error.description)), query: query))
        }
    }

    /// The answer for what was read: a room's history (nil: no such room), or why it could
    /// not be read.
    static func answer(room: String, _ read: Result<RoomHistory?, StoreReadError>, query: Query) -> HTTPResponse {
        let history: RoomHistory
        switch read {
        case .success(let found?): history = found
        case .success(nil): return APIError.response(ProtocolError(.unknownRoom, "no room \(room) with a history here", room: room), status: 404)
        case .failure(let error): return APIError.response(ProtocolError(.unavailable, "cannot read the history of \(room): \(error.reason)", room: room), status: 503)
        }
        var steps: [JSON] = []
        for step in history.steps where steps.count < query.limit && step.version < (query.before ?? Int.max) {
            let json = Self.json(step, withPatch: query.patches)
            if let viewer = query.viewer, json["viewer"]?.stringValue != viewer { continue }
            if let action = query.action, json["action"]?.stringValue != action { continue }
            steps.append(json)
        }
        return APIError.json(200, ["room": .string(room), "epoch": .string(history.epoch), "version": .int(history.version),
                                   "oldest": .int(history.oldest), "steps": .array(steps)])
    }

    /// `GET /rooms/{room}/state?at=V`: the published state at version V, rebuilt by the store
    /// (`RoomStore.state(room:at:)`) or from a cluster's log (`ClusterHistoryReader.state`); 410
    /// for a version no longer rebuilt.
    static func state(room: String, query: String?, rooms: RoomService, cluster: ClusterNode?, responder: @escaping @Sendable (HTTPResponse) -> Void) {
        guard let text = APIArguments.queryValue("at", in: query), let version = Int(text), version >= 0 else {
            return responder(APIError.response(ProtocolError(.badMessage, "at must be a version: GET /rooms/{room}/state?at=VERSION", room: room)))
        }
        if let cluster {
            return ClusterHistoryReader.entries(room: room, node: cluster) { read in
                switch read {
                case .success(let entries): responder(state(room: room, version: version, .success(ClusterHistoryReader.state(at: version, entries))))
                case .failure(let error): responder(state(room: room, version: version, .failure(error)))
                }
            }
        }
        guard let store = rooms.store else {
            return responder(noHistory(room))
        }
        do {
            responder(state(room: room, version: version, .success(try store.state(room: room, at: version))))
        } catch {
            responder(state(room: room, version: version, .failure(StoreReadError(reason: error.description))))
        }
    }

    /// The answer for a state rebuilt, or why it could not be.
    static func state(room: String, version: Int, _ read: Result<StateAtVersion, StoreReadError>) -> HTTPResponse {
        do {
            switch try read.get() {
            case .state(let epoch, let state):
                return APIError.json(200, ["room": .string(room), "kind": .string(String(room.prefix { $0 != ":" })), "epoch": .string(epoch),
                                           "version": .int(version), "state": state])
            case .notKept(let oldest, let newest):
                return notKept(room: room, version: version, oldest: oldest, newest: newest)
            case .noRoom:
                return APIError.response(ProtocolError(.unknownRoom, "no stored room \(room)", room: room), status: 404)
            }
        } catch {
            return APIError.response(ProtocolError(.unavailable, "cannot rebuild \(room) at \(version): \(error.reason)", room: room), status: 503)
        }
    }

    /// 410: `version` is not rebuilt (its range is `oldest` to `newest`).
    static func notKept(room: String, version: Int, oldest: Int, newest: Int) -> HTTPResponse {
        let why = version > newest ? "\(room) is at version \(newest)"
            : oldest > newest ? "the log holds no state of \(room)'s epoch to rebuild it from (its start or a checkpoint)"
            : "\(room) is rebuilt from version \(oldest) to \(newest)"
        return APIError.response(ProtocolError(.unknownRoom, "version \(version) is not kept: \(why)", room: room), status: 410)
    }

    /// A server without a store keeps no history.
    private static func noHistory(_ room: String) -> HTTPResponse {
        APIError.response(ProtocolError(.unknownRoom, "this server keeps no history: it stores no rooms (--memory-only, or no --data)", room: room),
                          status: 404)
    }

    /// One step: its provenance's fields (`cause` "unknown" for a step stored before history
    /// was recorded), `version`, `ops` and the first `pathsShown` paths; `patch` too if asked.
    static func json(_ step: RoomHistory.Step, withPatch: Bool = false) -> JSON {
        var object = (try? JSONParser().parse(step.provenance))?.objectValue ?? ["cause": "unknown"]
        object["version"] = .int(step.version)
        let operations = step.operations ?? (try? JSONParser().parse(step.frame))?["ops"]?.arrayValue ?? []
        object["ops"] = .int(operations.count)
        object["paths"] = .array(operations.prefix(pathsShown).compactMap { $0["path"] })
        if withPatch { object["patch"] = .array(operations) }
        return .object(object)
    }

    /// Why a history could not be read.
    struct StoreReadError: Error {
        let reason: String
    }
}
