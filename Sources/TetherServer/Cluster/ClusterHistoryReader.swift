import Synchronization
import TetherJSON

/// A room's history on a cluster: what its log still holds (its last 2,000 entries), each
/// version with the record its owner wrote (`LogEntry.steps`), merged entries split back into
/// their versions by their operations' counts. Entries of an earlier epoch are left out.
enum ClusterHistoryReader {
    /// Reads the room's log from JetStream; `completion` runs on no particular thread.
    static func read(room: String, node: ClusterNode, completion: @escaping @Sendable (Result<RoomHistory?, RoomHistoryAnswer.StoreReadError>) -> Void) {
        let entries = Mutex<[LogEntry]>([])
        node.log.read(stream: node.stream(room), subject: node.logSubject(room), from: 1, handler: { message in
            if let entry = LogEntry(headers: message.headers, data: message.data) { entries.withLock { $0.append(entry) } }
        }, completion: { result in
            if case .failure(let error) = result { return completion(.failure(.init(reason: "\(error)"))) }
            completion(.success(history(entries.withLock { $0 })))
        })
    }

    /// The history of `entries`, oldest first as the log holds them; nil when there are none.
    static func history(_ entries: [LogEntry]) -> RoomHistory? {
        guard let last = entries.last else { return nil }
        var steps: [RoomHistory.Step] = []
        for entry in entries where entry.epoch == last.epoch && entry.kind == .patch { steps += split(entry) }
        var history = RoomHistory(epoch: last.epoch, version: last.version)
        history.oldest = steps.first?.version ?? last.version
        history.steps = steps.reversed()
        return history
    }

    /// One step per version the entry's records name, each with its share of the frame's
    /// operations; an entry without records (older than history, or a node that wrote none) is
    /// one step at its last version.
    static func split(_ entry: LogEntry) -> [RoomHistory.Step] {
        let operations = (try? JSONParser().parse(entry.frame))?["ops"]?.arrayValue ?? []
        guard let records = entry.steps.flatMap({ try? JSONParser().parse($0) })?.arrayValue, !records.isEmpty else {
            return [RoomHistory.Step(version: entry.version, provenance: [], operations: operations)]
        }
        var steps: [RoomHistory.Step] = []
        var start = 0
        for record in records {
            guard case .object(var fields) = record, let version = fields["version"]?.intValue else { continue }
            let count = max(0, min(fields["ops"]?.intValue ?? 0, operations.count - start))
            fields["ops"] = nil
            fields["version"] = nil
            steps.append(RoomHistory.Step(version: version, provenance: JSON.object(fields).encoded(),
                                          operations: Array(operations[start..<start + count])))
            start += count
        }
        return steps
    }
}
