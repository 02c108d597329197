import TetherJSON
import TetherProtocol
import TetherState

/// Where a room's owner makes its version steps durable, and the one rule for everything a
/// room sends: output leaves once every step appended before it is durable, in order. So no
/// client ever sees a version, or an ack, that a crash could take back.
///
/// On one node the log is memory, plus the SQLite group commit for stored rooms
/// (`LocalRoomLog`); on a cluster it is the room's fenced stream (`ClusteredRoom`'s owner log),
/// which also gives a room taken over the state to continue from. Called on the owner's
/// executor, in the order produced.
protocol RoomLog: Sendable {
    /// Where the room continues from (stored, or replicated by a cluster node); nil: a new epoch.
    func restore() throws -> StoredRoom?
    /// A new epoch begins at `version` with `state` (and the ViewModel's `stored` state), before
    /// any of its steps.
    func startEpoch(_ epoch: String, version: Int, state: RoomState, lastChange: Int)
    /// A version step. `stored`: the operations it made on the ViewModel's stored state, kept
    /// with it and never sent to clients; `state` gives the state after it, for a log that keeps
    /// snapshots; `projections`, on a cluster's owner: what changed for viewers of other nodes'
    /// sessions, `{node: {viewerID: projection}}` (Cluster/ClusterViewers.swift); `applied`: the
    /// numbered action it applies, kept with it (a restarted room answers its repeats);
    /// `webhooks`: the step's events for webhook endpoints, recorded with it; `provenance`:
    /// what made it, who and when, kept with it for the room's history.
    func append(_ step: PatchFrame, stored: [PatchOperation], projections: JSON?, applied: ActionNumber?, lastChange: Int,
                webhooks: [WebhookDelivery], provenance: StepProvenance, state: () -> RoomState)
    /// Hands `deliveries` on once every step appended before them is durable.
    func release(_ deliveries: [RoomDelivery])
    /// The room leaves memory at `version` with `state`.
    func close(epoch: String, version: Int, state: RoomState, lastChange: Int)
    /// The room is deleted: the log forgets it, after what was appended before.
    func delete()
}

/// A room's state at one version: the published document clients mirror, and the state its
/// ViewModel keeps for itself (`ViewModelContext.stored`), which only the log keeps.
struct RoomState: Sendable {
    var published: JSON
    var stored: JSON

    /// The stored state after a step's stored `operations`: applied to the stored state held,
    /// or, when none is (a log begun before stored state existed), none unless the step sets it
    /// whole (`replace ""`, the first stored change of a room restored without it).
    static func stored(after operations: [PatchOperation], onto held: JSON?) throws(JSONPatchError) -> JSON? {
        var stored: JSON
        if let held {
            stored = held
        } else {
            guard case .replace(let path, _)? = operations.first, path.isRoot else { return nil }
            stored = .null
        }
        try stored.apply(operations)
        return stored
    }
}

/// A room's log on one node: memory, and for a stored room the SQLite store, whose group commit
/// makes a batch of steps durable together (`store.afterCommits` releases what follows them).
struct LocalRoomLog: RoomLog {
    let room: String
    let kind: String
    /// nil: memory only (per-session rooms, the server's own, `--memory-only`).
    let store: RoomStore?
    let output: any RoomOutput
    /// Where a memory-only room's webhook events go (a stored room's go in its commits).
    var webhooks: WebhookRecorder? = nil
    /// How much of the room's history the store keeps (its kind's).
    var retention = HistoryRetention()

    func restore() throws -> StoredRoom? {
        try store?.load(room: room)
    }

    func startEpoch(_ epoch: String, version: Int, state: RoomState, lastChange: Int) {
        var commit = RoomStore.Commit(room: room, kind: kind, epoch: epoch, patch: nil, version: version,
                                      state: RoomStore.Snapshot(state), lastChange: lastChange)
        commit.startsEpoch = true
        store?.commit(commit)
    }

    func append(_ step: PatchFrame, stored: [PatchOperation], projections: JSON?, applied: ActionNumber?, lastChange: Int,
                webhooks: [WebhookDelivery], provenance: StepProvenance, state: () -> RoomState) {
        guard let store else {
            if !webhooks.isEmpty { self.webhooks?.outbox.add(webhooks, now: lastChange) }
            return
        }
        // A kind that wants history snapshots closer than the room's snapshots gets both as often.
        let snapshotDue = step.version % min(RoomStore.snapshotInterval, retention.snapshotEvery ?? Int.max) == 0
        var commit = RoomStore.Commit(room: room, kind: kind, epoch: step.epoch, patch: step, version: step.version,
                                      state: snapshotDue ? RoomStore.Snapshot(state()) : nil, lastChange: lastChange)
        commit.retention = retention
        commit.applied = applied
        commit.webhooks = webhooks
        commit.provenance = provenance
        if !stored.isEmpty { commit.storedOperations = JSONPatch.encode(stored).encoded() }
        store.commit(commit)
    }

    func release(_ deliveries: [RoomDelivery]) {
        guard let store, store.durability != .none else { return output.deliver(deliveries) }
        let output = self.output
        store.afterCommits { output.deliver(deliveries) }
    }

    func close(epoch: String, version: Int, state: RoomState, lastChange: Int) {
        store?.commit(RoomStore.Commit(room: room, kind: kind, epoch: epoch, patch: nil, version: version,
                                       state: RoomStore.Snapshot(state), lastChange: lastChange))
    }

    func delete() {
        store?.delete(room: room)
    }
}
