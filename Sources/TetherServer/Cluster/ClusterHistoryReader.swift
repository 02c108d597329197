import Synchronization
import TetherJSON
import TetherProtocol

/// A room's history on a cluster: what its log still holds (its last 2,000 entries), each
/// version with the record its owner wrote (`LogEntry.steps`), merged entries split back into
/// their versions by their operations' counts. Entries of an earlier epoch are left out.
enum ClusterHistoryReader {
    /// Reads the room's log from JetStream; `completion` runs on no particular thread.
    static func read(room: String, node: ClusterNode, completion: @escaping @Sendable (Result<RoomHistory?, RoomHistoryAnswer.StoreReadError>) -> Void) {
        entries(room: room, node: node) { completion($0.map(history)) }
    }

    /// The room's log entries, oldest first, as JetStream holds them.
    static func entries(room: String, node: ClusterNode, completion: @escaping @Sendable (Result<[LogEntry], RoomHistoryAnswer.StoreReadError>) -> Void) {
        let entries = Mutex<[LogEntry]>([])
        node.log.read(stream: node.stream(room), subject: node.logSubject(room), from: 1, handler: { message in
            if let entry = LogEntry(headers: message.headers, data: message.data) { entries.withLock { $0.append(entry) } }
        }, completion: { result in
            if case .failure(let error) = result { return completion(.failure(.init(reason: "\(error)"))) }
            completion(.success(entries.withLock { $0 }))
        })
    }

    /// The published state at `version` from the log: the epoch's start (a snapshot entry) at or
    /// before it, then each version's share of the patch entries after it. Versions before the
    /// oldest epoch start the log still holds are not rebuilt.
    static func state(at version: Int, _ entries: [LogEntry]) -> StateAtVersion {
        switch room(at: version, entries) {
        case .room(let epoch, let state, _): return .state(epoch: epoch, state: state)
        case .notKept(let oldest, let newest): return .notKept(oldest: oldest, newest: newest)
        case .noRoom: return .noRoom
        }
    }

    /// A room at a version as its log rebuilds it.
    enum RoomAtVersion: Equatable {
        /// `stored`: the ViewModel's stored state then; nil when the log does not tell it apart
        /// (a version inside a merged entry whose steps changed it).
        case room(epoch: String, state: JSON, stored: JSON?)
        case notKept(oldest: Int, newest: Int)
        case noRoom
    }

    /// `state(at:_:)` with the stored state: the epoch start's whole, then each entry's operations.
    static func room(at version: Int, _ entries: [LogEntry]) -> RoomAtVersion {
        guard let last = entries.last else { return .noRoom }
        let current = entries.filter { $0.epoch == last.epoch }
        let oldest = current.first { $0.kind.holdsState }?.version ?? last.version + 1
        let notKept = RoomAtVersion.notKept(oldest: oldest, newest: last.version)
        guard version <= last.version, let base = current.lastIndex(where: { $0.kind.holdsState && $0.version <= version }),
              case .snapshot(_, _, let start, var state)? = try? ServerMessage.decode(current[base].frame) else { return notKept }
        var stored: JSON? = current[base].stored ?? .object([:])
        var reached = start
        for entry in current[(base + 1)...] where entry.kind == .patch && entry.from < version {
            for step in split(entry) where step.version > reached && step.version <= version {
                guard let operations = try? JSONPatch.decode(.array(step.operations ?? [])), (try? state.apply(operations)) != nil else { return notKept }
                reached = step.version
            }
            guard let changes = entry.stored else { continue }
            if entry.version <= version, let operations = try? JSONPatch.decode(changes), stored != nil, (try? stored!.apply(operations)) != nil { continue }
            stored = nil
        }
        return reached == version ? .room(epoch: last.epoch, state: state, stored: stored) : notKept
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

    /// The steps after `from` up to `to` with the room at `from`, from the log (`GET
    /// /rooms/{room}/export` on a cluster). The stored changes of a merged entry come with its
    /// last step (the others say `storedLater`); `from` inside such an entry is not exported.
    static func export(room: String, from: Int, to: Int, _ entries: [LogEntry]) -> RoomExportRead {
        let start: (epoch: String, state: JSON, stored: JSON)
        switch self.room(at: from, entries) {
        case .noRoom: return .noRoom
        case .notKept(let oldest, let newest): return .notKept(oldest: oldest, newest: newest)
        case .room(_, _, nil): return .notKept(oldest: from + 1, newest: entries.last?.version ?? from)
        case .room(let epoch, let state, let stored?): start = (epoch, state, stored)
        }
        guard let last = entries.last, to <= last.version else { return .notKept(oldest: from, newest: entries.last?.version ?? from) }
        var steps: [RoomExport.Step] = []
        for entry in entries where entry.epoch == start.epoch && entry.kind == .patch && entry.version > from && entry.from < to {
            let split = split(entry).filter { $0.version > from && $0.version <= to }
            let storedOperations = entry.stored?.arrayValue ?? []
            for (index, step) in split.enumerated() {
                let isLast = index == split.count - 1 && step.version == entry.version
                var provenance = (try? JSONParser().parse(step.provenance))?.objectValue ?? ["cause": "unknown"]
                if provenance.isEmpty { provenance = ["cause": "unknown"] }
                var exported = RoomExport.Step(version: step.version, provenance: .object(provenance), operations: step.operations ?? [],
                                               storedOperations: isLast ? storedOperations : [])
                exported.storedLater = !isLast && !storedOperations.isEmpty
                steps.append(exported)
            }
        }
        return .export(RoomExport(kind: String(room.prefix { $0 != ":" }), epoch: start.epoch, from: from, to: to, state: start.state,
                                  stored: start.stored, steps: steps))
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
