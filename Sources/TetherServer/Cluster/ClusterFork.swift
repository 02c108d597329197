import TetherJSON
import TetherProtocol
import TetherTransport

/// `POST /rooms/{room}/fork` on a cluster node: the room at the version, rebuilt from its log
/// (`ClusterHistoryReader.room`), becomes the first entry of the new room's log, an epoch start
/// appended only while that log is empty (a checked append), so a fork never overwrites a room,
/// and its snapshot. Any node then loads the new room from its log, as a room another node started.
enum ClusterFork {
    static func fork(_ source: String, query: String?, rooms: RoomService, node: ClusterNode, answer: @escaping @Sendable (HTTPResponse) -> Void) {
        let request: RoomService.ForkRequest
        switch rooms.forkRequest(source, query: query) {
        case .success(let checked): request = checked
        case .failure(let refusal): return answer(refusal.response)
        }
        ClusterHistoryReader.entries(room: source, node: node) { read in
            guard case .success(let entries) = read else {
                return answer(APIError.response(ProtocolError(.unavailable, "cannot read the log of \(source)", room: source), status: 503))
            }
            switch ClusterHistoryReader.room(at: request.at, entries) {
            case .noRoom:
                answer(APIError.response(ProtocolError(.unknownRoom, "no stored room \(source)", room: source), status: 404))
            case .notKept(let oldest, let newest):
                answer(RoomHistoryAnswer.notKept(room: source, version: request.at, oldest: oldest, newest: newest))
            case .room(_, _, nil):
                answer(APIError.response(ProtocolError(.unknownRoom, "the stored state of \(source) at version \(request.at) is not kept apart "
                                                       + "(its log holds several steps in one entry there): fork a version before or after it", room: source), status: 410))
            case .room(_, let state, let stored?):
                append(request, state: state, stored: stored, node: node, answer: answer)
            }
        }
    }

    private static func append(_ request: RoomService.ForkRequest, state: JSON, stored: JSON, node: ClusterNode,
                               answer: @escaping @Sendable (HTTPResponse) -> Void) {
        let epoch = RandomID.make(length: 10)
        let frame = ServerMessage.snapshot(room: request.target, epoch: epoch, version: 0, state: state).encoded()
        let entry = LogEntry(kind: .snapshot, epoch: epoch, from: 0, version: 0, node: node.name, term: "fork-\(RandomID.make(length: 8))",
                             frame: frame, stored: stored)
        node.log.append(node.logSubject(request.target), entry.data, headers: entry.headers, messageID: entry.messageID(room: request.target),
                        expectedLastSubjectSequence: 0, timeout: .seconds(5)) { result in
            switch result {
            case .success(let sequence):
                // Its snapshot too, so that the room list (read from the snapshots bucket) shows it
                // before any node loads it; create-only: a node that loaded it may have written one.
                let snapshot = ClusterSnapshot(epoch: epoch, version: 0, sequence: sequence, state: state, stored: stored)
                node.snapshots.create(node.token(request.target), snapshot.encoded) { _ in answer(request.made(epoch: epoch)) }
            case .failure(.wrongLastSequence): answer(request.exists)
            case .failure(let error):
                answer(APIError.response(ProtocolError(.unavailable, "cannot start \(request.target): \(error)", room: request.source), status: 503))
            }
        }
    }
}
