import TetherJSON
import TetherProtocol
import TetherState
import TetherTransport

/// `POST /rooms/{room}/fork` (`tether fork ROOM@V NEW`): a new room of the same kind whose
/// state is the room's at version V, published and stored, to explore a fix or preview a change
/// without touching the room. The new room starts its own history at version 0.
extension RoomService {
    /// What a fork asks for, checked: `?at=V&to=NEW`, NEW a room name of the room's kind.
    struct ForkRequest: Sendable {
        let source: String
        let target: String
        let at: Int
        let kind: ViewModelKind

        /// 201: the new room, at version 0 of `epoch`.
        func made(epoch: String) -> HTTPResponse {
            APIError.json(201, ["room": .string(target), "from": .string(source), "at": .int(at), "epoch": .string(epoch)])
        }

        /// 409: the new name is taken.
        var exists: HTTPResponse {
            APIError.response(ProtocolError(.badMessage, "a room \(target) exists: fork into a new name", room: source), status: 409)
        }
    }

    /// The request, or the answer that refuses it.
    func forkRequest(_ source: String, query: String?) -> Result<ForkRequest, ForkRefusal> {
        let request: (at: Int, target: String)
        switch Self.forkRequest(query) {
        case .success(let parsed): request = parsed
        case .failure(var error):
            error.room = source
            return .failure(ForkRefusal(APIError.response(error)))
        }
        guard case .success(let kind) = kind(forRoom: source), kind.scope == .shared, !SystemRoom.isSystemKind(kind.name) else {
            return .failure(ForkRefusal(APIError.response(ProtocolError(.unknownRoom, "no stored room \(source)", room: source), status: 404)))
        }
        guard case .success(let targetKind) = self.kind(forRoom: request.target), targetKind.name == kind.name else {
            return .failure(ForkRefusal(APIError.response(ProtocolError(.badMessage, "a fork is a room of the same kind: to must be \(kind.name) or \(kind.name):NAME, not \(request.target)",
                                                                        room: source), status: 422)))
        }
        return .success(ForkRequest(source: source, target: request.target, at: request.at, kind: kind))
    }

    struct ForkRefusal: Error {
        let response: HTTPResponse
        init(_ response: HTTPResponse) { self.response = response }
    }

    /// On the service's queue; `answer` gets 201 `{"room", "from", "at", "epoch"}` or the error.
    /// A cluster node forks through the room's log instead (`ClusterFork`).
    func fork(_ source: String, query: String?, answer: @escaping @Sendable (HTTPResponse) -> Void) {
        let request: ForkRequest
        switch forkRequest(source, query: query) {
        case .success(let checked): request = checked
        case .failure(let refusal): return answer(refusal.response)
        }
        guard let store else {
            return answer(APIError.response(ProtocolError(.unknownRoom, "this server keeps no history: it stores no rooms (--memory-only, or no --data)", room: source),
                                            status: 404))
        }
        let kind = request.kind
        let read: RoomExportRead
        do { read = try store.export(room: source, from: request.at, to: request.at) } catch {
            return answer(APIError.response(ProtocolError(.unavailable, "cannot read \(source) at \(request.at): \(error)", room: source), status: 503))
        }
        let export: RoomExport
        switch read {
        case .export(let found): export = found
        case .noRoom: return answer(APIError.response(ProtocolError(.unknownRoom, "no stored room \(source)", room: source), status: 404))
        case .notKept(let oldest, let newest):
            return answer(RoomHistoryAnswer.notKept(room: source, version: request.at, oldest: oldest, newest: newest))
        }
        let epoch = RandomID.make(length: 10)
        let now = runtime.clock.secondsSince1970
        let snapshot = RoomStore.Snapshot(RoomState(published: export.state, stored: export.stored ?? .object([:])))
        let claimed = registry.claim(request.target, .init(kind: kind.name, version: 0, lastChange: now, bytes: snapshot.published.count)) {
            store.commit(RoomStore.Commit(room: request.target, kind: kind.name, epoch: epoch, patch: nil, version: 0, state: snapshot,
                                          startsEpoch: true, lastChange: now))
        }
        guard claimed else { return answer(request.exists) }
        logger.info("room \(request.target) forked from \(source) at version \(request.at)")
        store.afterCommits { answer(request.made(epoch: epoch)) }
    }

    /// `?at=VERSION&to=NEW`.
    static func forkRequest(_ query: String?) -> Result<(at: Int, target: String), ProtocolError> {
        guard let text = APIArguments.queryValue("at", in: query), let at = Int(text), at >= 0 else {
            return .failure(ProtocolError(.badMessage, "at must be a version: POST /rooms/{room}/fork?at=VERSION&to=NEW"))
        }
        guard let target = APIArguments.queryValue("to", in: query), !target.isEmpty else {
            return .failure(ProtocolError(.badMessage, "to must name the new room: POST /rooms/{room}/fork?at=VERSION&to=NEW"))
        }
        return .success((at, target))
    }
}
