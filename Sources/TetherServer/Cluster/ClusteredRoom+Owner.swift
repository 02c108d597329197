import Logging
import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// Ownership: the lease, the owner's `Room` and its appends, actions forwarded to the owner and
/// served by it.
extension ClusteredRoom {
    // MARK: Actions

    func act(_ request: ActionForwarder<ActionReplyTarget>.Request) {
        guard replica.phase != .stopped else {
            return send([.init(outcome: .failed(Self.notApplied("room \(name) is closing on this node")), target: request.target)])
        }
        // Back from waiting for an owner past the limit (every try found nobody: nothing applied).
        guard now - request.sent < takeoverLimit else { return send([.init(outcome: noOwnerInTime, target: request.target)]) }
        if let ownership {
            return ownership.room.perform(request.action, args: request.args, number: request.number, replyTo: request.target)
        }
        guard replica.phase == .ready else {
            waitingActions.append(request)
            return scheduleAnswerCheck()
        }
        node.metrics.forwardedActions.increment()
        let number = forwarder.forward(request)
        let data = ForwardedAction.request(name: request.action, args: request.args, number: request.number, viewer: request.target.viewer)
        // By name to the owner this node knows of; to the owners' queue group when it knows none.
        let subject = knownOwner.map { node.actionSubject(name, owner: $0) } ?? node.actionSubject(name)
        node.messaging.request(subject, data, timeout: forwardTimeout(sent: request.sent)) { [self] result in
            execute { $0.forwardFinished(number, result) }
        }
    }

    func drainWaitingActions() {
        let actions = waitingActions
        waitingActions.removeAll()
        for request in actions { act(request) }
    }

    private func forwardFinished(_ number: Int, _ result: Result<NATSMessage, NATSError>) {
        switch forwarder.finished(number, result) {
        case nil:
            return  // answered already: the owner changed while it waited (`ownerChanged`)
        case .answer(let outcome, let target, let sent):
            acquiringEnded(false, served: true)
            send(gate.ownerAnswered(outcome, to: target, replica: position, deadline: replyDeadline(received: sent)))
        case .ownOrRetry(let request):
            waitForOwner(request)
        }
    }

    /// Nobody owns the room (or its owner just died): take it, or wait for its lease to end. One
    /// try at a time serves every action waiting; one still waiting at the limit is answered then
    /// (taking the room waits on the lease bucket, which a NATS fault can hold up for seconds).
    private func waitForOwner(_ request: ActionForwarder<ActionReplyTarget>.Request) {
        actionsWithoutOwner.append(request)
        scheduleAnswerCheck()
        guard actionsWithoutOwner.count == 1 else { return }
        acquire { [self] acquired in
            let requests = actionsWithoutOwner
            actionsWithoutOwner.removeAll()
            if acquired { return requests.forEach(act) }
            later(.milliseconds(250)) { room in requests.forEach(room.act) }
        }
    }

    /// Another node took the room: actions forwarded before it did went to the old owner (paused,
    /// cut off or dead), whose answer may never come. The new owner answers those it received
    /// itself within a moment; the rest are answered as unknown now rather than after the
    /// forward's timeout, so their clients go on (to the new owner) about a lease after the fault.
    func ownerChanged(to owner: String) {
        knownOwner = owner
        let stuck = forwarder.stuck
        guard !stuck.isEmpty else { return }
        later(.milliseconds(250)) { room in
            for case .answer(let outcome, let target, let sent) in room.forwarder.giveUp(stuck) {
                room.send(room.gate.ownerAnswered(outcome, to: target, replica: room.position, deadline: room.replyDeadline(received: sent)))
            }
        }
    }

    /// A forwarded action's owner answers, or is paused, cut off or dead: then the answer is
    /// unknown, and sooner is better (a new owner takes over in a lease). Within the answer limit
    /// of the action's sending, and at least a moment.
    private func forwardTimeout(sent: ContinuousClock.Instant) -> Duration {
        max(answerLimit - (now - sent), .milliseconds(100))
    }

    /// An action forwarded here by another node.
    private func receiveForwarded(_ message: NATSMessage) {
        let respond: @Sendable (ActionOutcome) -> Void = { outcome in try? message.respond(ForwardedAction.reply(outcome)) }
        guard let ownership else {
            // Not the owner any more: the sender's node sees this and retries on the new owner.
            return respond(.failed(Self.notApplied("room \(name) is changing owners")))
        }
        guard let (action, args, number, viewer) = ForwardedAction.parseRequest(message.data) else {
            return respond(.failed(ProtocolError(.badMessage, "unreadable forwarded action")))
        }
        ownership.room.perform(action, args: args, number: number, replyTo: .remote(viewer: viewer, respond: respond))
    }

    // MARK: The lease

    /// Makes sure somebody owns the room (so its timers run and actions have a home).
    func ensureOwner() {
        guard replica.phase == .ready else { return }
        perform(lease.ensure())
    }

    /// Every quarter lease: a room with subscribers here and no owner gets one (failover).
    func checkOwner() {
        guard replica.phase == .ready, !lease.isOwning, !followers.subscribers.isEmpty || !waitingJoins.isEmpty else { return }
        ensureOwner()
    }

    private func acquire(then done: @escaping (Bool) -> Void) {
        afterAcquiring.append(done)
        perform(lease.acquire())
    }

    private func perform(_ actions: [OwnerLease.Action]) {
        let token = node.token(name)
        for action in actions {
            switch action {
            case .probe:
                node.owners.get(token) { [self] result in
                    execute { room in
                        room.learnOwner(from: result)
                        room.perform(room.lease.probed(result))
                    }
                }
            case .create:
                node.owners.create(token, Array(node.name.utf8)) { [self] result in
                    execute { room in
                        if case .failure(let error) = result { room.acquiring(failed: "its lease was not created (\(error))") }
                        room.perform(room.lease.created(result, now: room.now))
                    }
                }
            case .readHolder:
                node.owners.get(token) { [self] result in
                    execute { room in
                        room.learnOwner(from: result)
                        switch result {
                        case .success(let entry?): room.acquiring(failed: "node \(String(decoding: entry.value, as: UTF8.self)) holds its lease")
                        case .success(nil): room.acquiring(failed: "its lease was taken, then gone")
                        case .failure(let error): room.acquiring(failed: "its lease could not be read (\(error))")
                        }
                        room.perform(room.lease.holderRead(result, now: room.now))
                    }
                }
            case .readLog:
                // Catch up first: the previous owner's last versions may not have reached us yet.
                guard replica.phase != .stopped else { return perform(lease.abandon()) }
                readLog { room, read in
                    // A replica that started over meanwhile holds nothing to take over from yet.
                    let result = room.replica.phase == .ready ? read : .failure(.invalidArgument("the replica is loading again"))
                    if case .failure(let error) = result {
                        room.logger.debug("cluster: room \(room.name): cannot read its log to take it over yet (\(error))")
                        room.acquiring(failed: "its log could not be read (\(error))")
                    }
                    room.perform(room.lease.logRead(result, now: room.now))
                }
            case .readLogAgain(let delay):
                later(delay) { $0.perform([OwnerLease.Action.readLog]) }
            case .own:
                if !becomeOwner() { perform(lease.ownFailed()) }
            case .renew(let revision):
                node.owners.update(token, Array(node.name.utf8), lastRevision: revision) { [self] result in
                    execute { $0.perform($0.lease.renewed(result)) }
                }
            case .release:
                node.owners.delete(token) { _ in }
            case .stepDown(let reason):
                stepDown(reason, releaseLease: false, fenced: false)
            case .acquired(let acquired):
                acquiringEnded(acquired)
                let waiting = afterAcquiring
                afterAcquiring.removeAll()
                for done in waiting { done(acquired) }
            case .checkHolder:
                node.owners.get(token) { [self] result in execute { $0.perform($0.lease.holderChecked(result)) } }
            case .recreate:
                node.owners.create(token, Array(node.name.utf8)) { [self] result in execute { $0.perform($0.lease.recreated(result)) } }
            case .renewalFailed(let error):
                logger.debug("cluster: room \(name): lease not renewed (\(error)); the log still fences")
            }
        }
    }

    /// Notes why a try to take the room over failed.
    private func acquiring(failed why: String) {
        if failedAcquiring == nil { failedAcquiring = (now, why, false) } else { failedAcquiring!.why = why }
    }

    /// A try to take the room over ended, or (`served`) an owner answered a forwarded action.
    /// A room this node could not take for `ownerlessWarning` while no owner answered is logged
    /// once, with the last reason, and when that ends: the cause is mostly outside tetherd (its
    /// lease bucket or log without a working leader).
    func acquiringEnded(_ acquired: Bool, served: Bool = false) {
        guard let failed = failedAcquiring else { return }
        if acquired || served {
            if failed.logged { logger.notice("cluster: room \(name) is served again, \(now - failed.since) after this node first failed to take it over") }
            failedAcquiring = nil
        } else if !failed.logged, now - failed.since >= Self.ownerlessWarning {
            logger.warning("cluster: room \(name): no owner answered and this node could not take it over for \(now - failed.since): \(failed.why)")
            failedAcquiring!.logged = true
        }
    }

    static let ownerlessWarning: Duration = .seconds(10)

    /// Who holds the lease, when it is another node: forwards go to it.
    private func learnOwner(from result: Result<NATSKeyValue.Entry?, NATSError>) {
        guard case .success(let entry?) = result else { return }
        let holder = String(decoding: entry.value, as: UTF8.self)
        if holder != node.name { knownOwner = holder }
    }

    /// The lease is ours and the replica read the log to its end: run the ViewModel from its
    /// state. The same epoch continues when the ViewModel takes the state; else (the log holds
    /// none, or the state no longer restores) the owner's `Room` starts a new one in the log.
    private func becomeOwner() -> Bool {
        let restored = followers.hasEpoch
            ? StoredRoom(epoch: followers.epoch, version: version, state: document, stored: storedDocument, patches: [], actions: outcomes.applied)
            : nil
        let term = RandomID.make(length: 10)
        let room = Room(name: name, kind: kind, environment: environment, log: OwnerLog(room: self, term: term, restored: restored))
        room.start(after: nil)
        appender.own(term: term, after: replica.lastSequence, version: version)
        let subscriptions: [any ClusterSubscription]
        do {
            // Forwards come by name. The owners' queue group serves senders that know no owner
            // (and tetherd before named forwards): a node that still believes it owns the room
            // (paused past its lease, not yet fenced) and the new owner must never both get one
            // forwarded action. Both would answer it, and the first answer wins: the old owner's
            // "not stored, nothing was applied" could beat the new owner's ack of the same action.
            let receive: @Sendable (NATSMessage) -> Void = { [self] message in execute { $0.receiveForwarded(message) } }
            subscriptions = [try node.messaging.subscribe(node.actionSubject(name, owner: node.name), handler: receive),
                             try node.messaging.subscribe(node.actionSubject(name), queueGroup: "owner", handler: receive)]
        } catch {
            logger.warning("cluster: room \(name): cannot take forwarded actions (\(error)); not taking it over")
            room.stop()
            _ = appender.stepDown(fenced: true, now: now)
            return false
        }
        let renewal = environment.runtime.clock.startTimer(every: node.lease / 3) { [self] in execute { $0.perform($0.lease.renewDue()) } }
        ownership = Ownership(room: room, term: term, actions: subscriptions, renewal: renewal)
        knownOwner = node.name
        node.didTakeOwnership(of: name)
        try? node.messaging.publish(node.ownerSubject(name), Array(node.name.utf8))
        logger.info("cluster: node \(node.name) owns room \(name) from version \(version) of \(restored?.epoch ?? "a new epoch")")
        // The room's executor runs its start (a new epoch's snapshot goes to the log first)
        // before anything handed to it now.
        feedOwner(room)
        drainWaitingActions()
        webhooks.newTerm()
        copyWebhooks()  // what the last owner may not have copied
        return true
    }

    /// Gives the owner's ViewModel what the cluster knows of the room, then every change as it
    /// arrives: the members on every node (its `context.presence`) and the viewers of every
    /// node's sessions (for per-viewer values). What nodes hold of projections is not known
    /// after a change of owner, so each viewer's projection is sent once whatever it is.
    private func feedOwner(_ room: Room) {
        if let presence {
            room.clusterPresenceChanged(listed: Array(presence.document.members.values), left: [])
            presence.onMemberChange = { listed, left in room.clusterPresenceChanged(listed: listed, left: left) }
        }
        if let viewers {
            for (node, announced) in viewers.all where !announced.isEmpty {
                room.clusterViewersChanged(node: node, set: announced.map { AnnouncedViewer(viewer: $0.viewer, holds: true) }, removed: [])
            }
            viewers.onChange = { node, set, removed in room.clusterViewersChanged(node: node, set: set, removed: removed) }
            viewers.sync()
        }
    }

    /// Stops owning: the ViewModel stops and the replica goes on following the log. Turns not
    /// appended are dropped: their actions were not applied. The append in flight, if any, was
    /// refused when `fenced` (another owner's entry holds its place); else the log decides it.
    func stepDown(_ reason: String, releaseLease: Bool, fenced: Bool) {
        guard let ownership else { return }
        logger.notice("cluster: node \(node.name) stops owning room \(name): \(reason)")
        self.ownership = nil
        webhooks.newTerm()
        presence?.onMemberChange = nil
        viewers?.onChange = nil
        ownership.room.stop()
        for subscription in ownership.actions { subscription.unsubscribe() }
        if knownOwner == node.name { knownOwner = nil }
        ownership.renewal.cancel()
        node.didReleaseOwnership(of: name)
        perform(lease.stepDown(release: releaseLease))
        let inFlightVersion = appender.stepDown(fenced: fenced, now: now)
        send(gate.ownerSteppedDown(inFlightVersion: inFlightVersion, fenced: fenced, notStored: notStored))
        if gate.hasUndecided {
            later(LogAppender.undecidedLimit) { $0.giveUpUndecided() }
        } else {
            _ = appender.expireUndecided(now: now, force: true)
        }
    }

    /// The undecided append did not show up in the log in time: its actions' fate is unknown.
    func giveUpUndecided() {
        guard appender.expireUndecided(now: now, force: replica.phase == .stopped) else { return }
        send(gate.undecidedExpired(unknownOutcome))
    }

    var unknownOutcome: ActionOutcome {
        .failed(ProtocolError(.unavailable, "room \(name) lost its owner while this action was being stored", applied: .unknown))
    }

    // MARK: Appending (owner)

    func perform(_ actions: [LogAppender.Action]) {
        for action in actions {
            switch action {
            case .append(let entry, let expected):
                node.log.append(node.logSubject(name), entry.data, headers: entry.headers, messageID: entry.messageID(room: name),
                                expectedLastSubjectSequence: expected, timeout: LogAppender.tryTimeout) { [self] result in
                    execute { $0.perform($0.appender.appendFinished(result, entry: entry, now: $0.now)) }
                }
            case .retry(let entry, let delay):
                later(delay) { $0.perform($0.appender.resend(entry)) }
            case .readToDecide(let entry, let started, let delay):
                later(delay) { room in
                    room.readLog { room, _ in room.perform(room.appender.readToDecideFinished(entry, since: started, now: room.now)) }
                }
            case .stored(let version, let sequence, let latency):
                node.metrics.appendLatency.record(latency)
                send(gate.stored(upTo: version, at: sequence, replica: position))
            case .stepDown(let reason, let releaseLease, let fenced):
                stepDown(reason, releaseLease: releaseLease, fenced: fenced)
            case .decided(let stored, let sequence):
                send(gate.decided(stored: stored, at: sequence, notStored: notStored, replica: position))
            }
        }
    }

    /// A step the owner's ViewModel produced in `term`, for the log.
    func ownerProduced(_ step: LogAppender.Step, term: String) {
        perform(appender.produced(step, term: term, now: now))
    }

    /// What the owner's `Room` sends after its steps: its replies, which wait for the log (the
    /// owner's `Room` has no subscribers: each node's replica serves them). An ack waits for the
    /// version it names (a repeat's, answered from the record, may be stored long since); an
    /// error for every step produced before it.
    func ownerReleased(_ deliveries: [RoomDelivery], term: String) {
        for case .reply(let outcome, let target) in deliveries {
            var version = appender.producedVersion
            if case .applied(let applied) = outcome { version = applied }
            guard appender.term == term else {
                // The term ended between the step and this reply: the step's fate decides.
                send(gate.ownerRepliedLate(outcome, to: target, isLocal: target.isLocal, fate: appender.fate(ofVersion: version, term: term),
                                           notStored: notStored, unknown: unknownOutcome, replica: position, deadline: replyDeadline(for: target)))
                continue
            }
            send(gate.ownerReplied(outcome, to: target, isLocal: target.isLocal, version: version,
                                   stored: (appender.stored.version, appender.stored.sequence), replica: position,
                                   deadline: replyDeadline(for: target)))
        }
    }
}
