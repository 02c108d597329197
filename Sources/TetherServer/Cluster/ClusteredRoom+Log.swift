import Logging
import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// The replica: following the room's log and applying its entries to this node's document,
/// stored state, numbered-action record and subscribers.
extension ClusteredRoom {
    func perform(_ actions: [LogReplica.Action]) {
        for action in actions {
            switch action {
            case .loadSnapshot(let delay):
                later(delay) { $0.loadSnapshot() }
            case .catchUp(let delay):
                later(delay) { room in
                    room.node.metrics.catchUps.increment()
                    let generation = room.replica.generation
                    room.readLog { room, result in
                        if case .failure(let error) = result, generation == room.replica.generation {
                            room.logger.warning("cluster: room \(room.name): reading its log failed (\(error)); retrying")
                        }
                        room.perform(room.replica.caughtUp(result, generation: generation))
                    }
                }
            case .apply(let message, let sequence):
                apply(message.headers, message.data, sequence: sequence)
            case .replay(let messages):
                for message in messages { perform(replica.live(message)) }
                perform(replica.finishLoading())
            case .becameReady:
                ensureOwner()
                serveWaiting()
                drainWaitingActions()
            case .verify(let delay):
                later(delay) { $0.perform($0.replica.verify()) }
            }
        }
    }

    /// Reads the log after the replica's last message to its end, applying each message; then
    /// `completion`. Catching up, deciding an append and taking the room over all read this way.
    /// Messages of a read that the replica started over during (`reload`) are dropped: one that
    /// does not continue the replica would start it over again, once per message.
    func readLog(then completion: @escaping @Sendable (isolated ClusteredRoom, Result<UInt64?, NATSError>) -> Void) {
        let generation = replica.generation
        node.log.read(stream: node.stream(name), subject: node.logSubject(name), from: replica.lastSequence + 1, handler: { [self] stored in
            execute { room in
                guard room.replica.generation == generation else { return }
                room.apply(stored.headers, stored.data, sequence: stored.sequence)
            }
        }, completion: { [self] result in
            execute { completion($0, result) }
        })
    }

    private func loadSnapshot() {
        node.snapshots.get(node.token(name)) { [self] result in
            execute { $0.snapshotLoaded(result) }
        }
    }

    private func snapshotLoaded(_ result: Result<NATSKeyValue.Entry?, NATSError>) {
        guard replica.phase != .stopped else { return }
        guard case .success(let entry) = result else {
            if case .failure(let error) = result { logger.warning("cluster: room \(name): cannot read its snapshot (\(error)); retrying") }
            return perform(replica.snapshotFailed())
        }
        guard let entry, let snapshot = ClusterSnapshot(entry.value) else { return perform(replica.restored(at: nil)) }
        if ownership != nil, snapshot.sequence > appender.stored.sequence {
            // The replica started over while owning, and the entry after the owner's last stored
            // one is behind the snapshot: only the log's later entries are read, which cannot say
            // whether the append in flight got that place.
            stepDown("its log moved on past its last stored entry while it reloaded", releaseLease: false, fenced: false)
        }
        if let undecided = appender.undecided, snapshot.sequence > undecided.after {
            // The entry that would decide it is behind the snapshot: not read any more.
            if appender.expireUndecided(now: now, force: true) { send(gate.undecidedExpired(unknownOutcome)) }
        }
        followers.restart(epoch: snapshot.epoch, version: snapshot.version)
        document = snapshot.state
        storedDocument = snapshot.stored
        lastSnapshotVersion = snapshot.version
        outcomes = ActionOutcomes()
        outcomes.restore(applied: snapshot.actions)
        webhooks.restored(snapshot.webhooks)
        publishListing(changed: false)
        perform(replica.restored(at: snapshot.sequence))
    }

    /// Applies one log message: a version step fans out to this node's subscribers.
    func apply(_ headers: NATSHeaders, _ data: [UInt8], sequence: UInt64) {
        guard replica.isNew(sequence) else { return }
        guard let entry = LogEntry(headers: headers, data: data) else {
            logger.error("cluster: room \(name): log message \(sequence) is not a Tether entry; skipped")
            return replica.applied(sequence)
        }
        perform(appender.logHolds(entry, at: sequence, now: now))
        switch entry.kind {
        case .snapshot:
            guard case .snapshot(_, let newEpoch, let newVersion, let state)? = try? ServerMessage.decode(entry.frame) else { return }
            followers.restart(epoch: newEpoch, version: newVersion, frame: entry.frame)
            outcomes = ActionOutcomes()  // a new epoch's versions: the old outcomes name none of them
            document = state
            storedDocument = entry.stored
            publishListing(changed: true)
            replica.applied(sequence)
            // A new epoch: everyone here starts over from its snapshot (with their projection).
            output.deliver(followers.subscribers.all.map { followers.snapshot(for: $0, document: { document }) })
            serveWaiting()
        case .patch:
            guard applyPatch(entry, at: sequence) else { return reload() }
        case .checkpoint:
            replica.applied(sequence)  // the state this replica holds already; for the room's history
        }
        if !entry.webhooks.isEmpty || entry.webhooksCopied != nil { loggedWebhooks(entry) }
        send(gate.replicaMoved(position))
        if lease.isOwning, version - lastSnapshotVersion >= ClusterNode.snapshotInterval { writeSnapshot() }
    }

    /// A version step; false when it does not continue what this replica holds.
    private func applyPatch(_ entry: LogEntry, at sequence: UInt64) -> Bool {
        guard entry.epoch == followers.epoch, entry.from == version,
              case .patch(_, _, _, _, let operations)? = try? ServerMessage.decode(entry.frame) else {
            logger.error("cluster: room \(name): log message \(sequence) (\(entry.epoch) \(entry.from)->\(entry.version)) does not continue version \(version) of \(followers.hasEpoch ? followers.epoch : "no epoch"); reloading")
            return false
        }
        do {
            try document.apply(operations)
        } catch {
            logger.error("cluster: room \(name): log message \(sequence) does not apply (\(error)); reloading")
            return false
        }
        applyStored(entry.stored, at: sequence)
        replica.applied(sequence)
        guard let patch = PatchFrame(room: name, epoch: entry.epoch, from: entry.from, version: entry.version, encodedFrame: entry.frame,
                                     compressAbove: environment.configuration.compressionThreshold) else {
            logger.error("cluster: room \(name): log message \(sequence) has an unreadable frame; reloading")
            return false
        }
        // What the owner says this node's viewers see now; the operations are this node's
        // own, from what its sessions hold (robust against stale messages).
        let given = entry.projections?[node.name]?.objectValue
        let changes = given == nil ? [:] : followers.updateViews { viewer in given![viewer.id]?.objectValue }
        outcomes.record(applied: entry.actions)
        publishListing(changed: true)
        let deliveries = followers.follow(patch, changes: changes)
        if !deliveries.isEmpty { output.deliver(deliveries) }
        return true
    }

    /// The room list's size and last change, as a single node's room gives them: the time of the
    /// last step this replica applied (a room just loaded counts from then), and the state's
    /// encoded size, measured at most once a wall-clock second (encoding a big state at every
    /// step would cost more than the step).
    private func publishListing(changed: Bool) {
        let now = environment.runtime.clock.secondsSince1970
        if changed || published.lastChange == 0 { published.lastChange = now }
        if !changed || now != sizeMeasuredAt {
            sizeMeasuredAt = now
            published.stateBytes = document.encoded().count
        }
    }

    /// A step's operations on the stored state. A replica that holds none (the log began before
    /// tetherd stored any) starts from the step that sets it whole (`RoomState.stored(after:onto:)`).
    private func applyStored(_ json: JSON?, at sequence: UInt64) {
        guard let json else { return }
        do {
            storedDocument = try RoomState.stored(after: JSONPatch.decode(json), onto: storedDocument)
        } catch {
            logger.error("cluster: room \(name): log message \(sequence)'s stored state change does not apply (\(error)); its stored state is dropped")
            storedDocument = nil
        }
    }

    /// Starts the replica over from the latest snapshot (the log disagreed with it).
    private func reload() {
        followers.restart(epoch: "", version: 0)
        outcomes = ActionOutcomes()
        webhooks.restored([])
        document = .null
        storedDocument = nil
        perform(replica.reload(now: now))
    }

    private func writeSnapshot() {
        guard followers.hasEpoch else { return }
        lastSnapshotVersion = version
        let snapshot = ClusterSnapshot(epoch: followers.epoch, version: version, sequence: replica.lastSequence, state: document,
                                       stored: storedDocument, actions: outcomes.applied, webhooks: webhooks.events)
        let written = version
        node.snapshots.put(node.token(name), snapshot.encoded) { [self] result in
            execute { room in
                guard case .failure(let error) = result else {
                    if room.snapshotsFailing { room.logger.notice("cluster: room \(room.name): snapshots are written again (version \(written))") }
                    room.snapshotsFailing = false
                    return
                }
                if !room.snapshotsFailing {
                    room.logger.warning("cluster: room \(room.name): snapshot not written: \(error); trying again every \(Self.snapshotRetryVersions) versions")
                }
                room.snapshotsFailing = true
                // Not a whole interval later: the log keeps `logMessagesPerRoom` entries per room, and a
                // replica whose snapshot is older than those cannot catch up until a newer one is written.
                room.lastSnapshotVersion = min(room.lastSnapshotVersion, written - ClusterNode.snapshotInterval + Self.snapshotRetryVersions)
            }
        }
    }

    // MARK: Webhook events

    /// An entry's events are stored in the log: pending until a later entry's mark says they
    /// are copied. The owner copies them now.
    private func loggedWebhooks(_ entry: LogEntry) {
        let dropped = webhooks.logged(entry.webhooks, mark: entry.webhooksCopied)
        if dropped > 0, ownership != nil {
            logger.error("cluster: room \(name): \(dropped) webhook events dropped: more than \(PendingWebhooks.limit) waited to be copied into the webhook stream")
            node.metrics.webhookEventsDropped.increment(by: Int64(dropped))
        }
        copyWebhooks()
    }

    /// The owner writes the next batch of pending events to the webhook stream; its next entry
    /// carries the mark. A write that failed is tried again after a second.
    func copyWebhooks() {
        guard let ownership, let outbox = webhookRecorder?.outbox as? ClusterWebhookOutbox, let batch = webhooks.nextBatch() else { return }
        let term = ownership.term
        outbox.write(batch) { [self] count in
            execute { room in
                guard room.ownership?.term == term else { return }
                room.webhooks.wrote(batch, count: count)
                room.appender.webhooksCopied = room.webhooks.copied
                if count == batch.count { room.copyWebhooks() } else { room.later(.seconds(1)) { $0.copyWebhooks() } }
            }
        }
    }
}
