import Logging
import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// The log of the owner's `Room`: the room's fenced stream. Its steps are appended there (and
/// a new epoch's snapshot first), its replies wait for them; a room taken over continues from
/// the replica's state.
struct OwnerLog: RoomLog {
    let room: ClusteredRoom
    let term: String
    let restored: StoredRoom?

    func restore() -> StoredRoom? { restored }

    func startEpoch(_ epoch: String, version: Int, state: RoomState, lastChange: Int) {
        let frame = ServerMessage.snapshot(room: room.name, epoch: epoch, version: version, state: state.published).encoded()
        hand(.epochStart(epoch: epoch, version: version, frame: frame, stored: state.stored))
    }

    func append(_ step: PatchFrame, stored: [PatchOperation], projections: JSON?, applied: ActionNumber?, lastChange: Int,
                webhooks: [WebhookDelivery], provenance: StepProvenance, state: () -> RoomState) {
        // The step's events go into its log entry: acked with it, then copied to the webhook stream.
        var record = provenance
        record.node = room.node.name
        var fields = record.json(digestKey: room.node.historyKey).objectValue ?? [:]
        fields["version"] = .int(step.version)
        fields["ops"] = .int(step.operations.count)
        hand(.patch(step, stored: stored, projections: projections, applied: applied, webhooks: webhooks,
                    provenance: JSON.object(fields).encoded()))
        if step.version % checkpointInterval == 0 {
            let state = state()
            let frame = ServerMessage.snapshot(room: room.name, epoch: step.epoch, version: step.version, state: state.published).encoded()
            hand(.checkpoint(epoch: step.epoch, version: step.version, frame: frame, stored: state.stored))
        }
    }

    /// Versions between checkpoints: the log keeps `ClusterNode.logMessagesPerRoom` entries, so
    /// every version in its newer three quarters rebuilds from one in it; closer if the kind asks.
    var checkpointInterval: Int {
        min(ClusterNode.checkpointInterval, room.kind.historyRetention.snapshotEvery ?? Int.max)
    }

    private func hand(_ step: LogAppender.Step) {
        let term = self.term
        room.execute { $0.ownerProduced(step, term: term) }
    }

    func release(_ deliveries: [RoomDelivery]) {
        let term = self.term
        room.execute { $0.ownerReleased(deliveries, term: term) }
    }

    // The log keeps the room: nothing to store when the owner's `Room` stops, or to forget here.
    func close(epoch: String, version: Int, state: RoomState, lastChange: Int) {}
    func delete() {}
}
