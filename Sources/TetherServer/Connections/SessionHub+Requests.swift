import Logging
import TetherJSON
import TetherProtocol
import TetherState
import TetherTransport

/// What clients ask for: joins, leaves, actions, presence updates, descriptions. Each is
/// admitted (`Admission`) and routed to the room; a refusal is an error for this connection only.
extension SessionHub {
    // MARK: Requests

    func join(_ name: String, id: Int?, since: ResumePoint?, token: String?, presence: JSON?, watchPresence: Bool, session: Session) {
        guard let kind = kind(forRoom: name, id: id, session: session) else { return }
        if let presence, let error = presenceDataError(presence, id: id, room: name) {
            reject(error, session: session)
            return
        }
        var facts = facts(of: session, in: name)
        facts.roomsJoined = session.joined.count
        facts.room = rooms.counts(forRoom: name, kind: kind, privateInstance: session.privateRooms[name])
        switch Admission.decide(.join(room: name, kind: kind, token: token), facts: facts, settings: configuration) {
        case .failure(let refusal):
            return refuse(refusal, id: id, room: name, session: session)
        case .success(.token(let claims)):
            // The same leeway as the join's check: a token accepted at the join still acts.
            session.authorizedUntil[name] = claims.expires + configuration.tokenVerifier.leeway
            session.viewers[name] = Viewer(id: claims.subject, claims: claims.payload)
            session.readOnly[name] = SystemRoom.isSystemKind(kind.name) || claims.allows(.act, room: name) ? nil : claims.subject
        case .success(.open):
            session.readOnly[name] = nil
        }
        session.consecutiveErrors = 0
        let previous = session.joined[name]
        let room = self.room(named: name, kind: kind, for: session, joining: previous == nil)
        if let previous, previous !== room {
            // Deleted (by the administration) and made anew since this session joined it.
            session.joined[name] = nil
            session.sendQueue.forget(room: name)
            previous.leave(SessionHandle(session: session))
            if kind.scope == .shared { rooms.memberJoined(name, of: kind) }
        }
        if session.joined[name] == nil {
            if kind.scope == .perSession { rooms.memberJoined(name, of: kind) }
            session.joined[name] = room
        } else {
            session.sendQueue.forget(room: name)  // a second join restarts the room's stream
        }
        let viewer = viewer(of: session, in: name)
        let handle = SessionHandle(session: session, viewer: viewer)
        // Rooms without presence ignore it: no stream, nothing listed. A member's user is its
        // viewer: the token's subject groups a person's connections, else each connection is one.
        // `presence` lists the connection whatever `watchPresence` says.
        var listing: PresenceJoin?
        if kind.hasPresence {
            listing = presence.map { .member(PresenceMember(id: session.id, user: viewer.id, data: $0)) } ?? (watchPresence ? .spectator : nil)
        }
        room.join(handle, since: since, id: id, presence: listing)
    }

    /// Replaces the connection's presence data in a room it joined with presence. Counted
    /// against the same token bucket as actions.
    func updatePresence(_ name: String, data: JSON, id: Int?, session: Session) {
        var facts = facts(of: session, in: name)
        facts.withinRate = session.actions.take(now: now)
        if case .failure(let refusal) = Admission.decide(.updatePresence(room: name), facts: facts, settings: configuration) {
            return refuse(refusal, id: id, room: name, session: session)
        }
        if let error = presenceDataError(data, id: id, room: name) {
            reject(error, session: session)
            return
        }
        guard let room = session.joined[name] else {
            reject(ProtocolError(.invalidArgs, "join \(name) with presence before updating it", id: id, room: name), session: session)
            return
        }
        session.consecutiveErrors = 0
        room.updatePresence(SessionHandle(session: session, viewer: viewer(of: session, in: name)), data: data, id: id)
    }

    /// Presence data is an object (the codec checks) of at most `TetherProtocol.maxPresenceBytes` encoded.
    func presenceDataError(_ data: JSON, id: Int?, room: String) -> ProtocolError? {
        let size = data.encoded().count
        guard size > TetherProtocol.maxPresenceBytes else { return nil }
        return ProtocolError(.tooLarge, "presence data is \(size) bytes encoded; the limit is \(TetherProtocol.maxPresenceBytes)", id: id, room: room)
    }

    /// Leaving a room not joined is not an error: the client's wish already holds.
    func leave(_ name: String, id: Int?, session: Session) {
        session.consecutiveErrors = 0
        session.authorizedUntil[name] = nil
        session.viewers[name] = nil
        session.readOnly[name] = nil
        if let room = session.joined.removeValue(forKey: name) {
            session.sendQueue.forget(room: name)
            let handle = SessionHandle(session: session)
            room.leave(handle)
            rooms.memberLeft(name, of: room)
        }
        if let id { enqueue(.control(ServerMessage.ack(id: id, room: name, version: nil).encoded()), for: session) }
    }

    func perform(_ action: String, args: JSON?, id: Int, seq: Int?, room name: String, session: Session) {
        guard let kind = kind(forRoom: name, id: id, session: session) else { return }
        if seq != nil, session.identity == nil {
            reject(ProtocolError(.badMessage, "a numbered action (seq) needs a hello with your client id first", id: id, room: name), session: session)
            return
        }
        var facts = facts(of: session, in: name)
        facts.withinRate = session.actions.take(now: now)
        if !facts.joined { facts.room = rooms.counts(forRoom: name, kind: kind, privateInstance: session.privateRooms[name]) }
        if case .failure(let refusal) = Admission.decide(.act(room: name, kind: kind), facts: facts, settings: configuration) {
            return refuse(refusal, id: id, room: name, session: session)
        }
        guard kind.actionNames.contains(action) else {
            let known = kind.actionNames.isEmpty ? "it has none" : "its actions are \(kind.actionNames.joined(separator: ", "))"
            reject(ProtocolError(.unknownAction, "\(kind.name) has no action \"\(action)\"; \(known)", id: id, room: name), session: session)
            return
        }
        session.consecutiveErrors = 0
        let room = session.joined[name] ?? self.room(named: name, kind: kind, for: session)
        let handle = SessionHandle(session: session, viewer: viewer(of: session, in: name))
        // With tokens the token's subject is part of the key: a guessed client id answers nothing.
        let number = seq.map { seq in
            ActionNumber(client: !configuration.requiresTokens ? session.identity!.client : "\(handle.viewer.id) \(session.identity!.client)", seq: seq)
        }
        room.perform(action, args: args, id: id, number: number, from: handle)
    }

    /// Who `session` is in room `name`: its token's subject there, or without tokens who its
    /// hello says (`user`, else `client`), or the connection's anonymous id (the `session` of the
    /// server's hello).
    func viewer(of session: Session, in name: String) -> Viewer {
        session.viewers[name] ?? Viewer(id: session.identity?.viewer ?? session.id)
    }

    /// The client's `hello`: first, once (the same one again changes nothing).
    func hello(client: String, user: String?, session: Session) {
        let identity = (client: client, viewer: user ?? client)
        if let known = session.identity, known == identity { return }
        guard session.identity == nil, !session.hasRequested else {
            let reason = session.identity == nil ? "a hello must come before joins and actions" : "this connection said hello already, as someone else"
            reject(ProtocolError(.badMessage, reason), session: session)
            return
        }
        session.identity = identity
    }

    func describe(_ kind: String?, id: Int?, session: Session) {
        let kinds: [ViewModelKind]
        if let kind {
            guard let found = rooms.registry.kind(named: kind) else {
                reject(ProtocolError(.unknownRoom, "no room kind \"\(kind)\"; kinds are \(rooms.registry.kindNames.joined(separator: ", "))", id: id), session: session)
                return
            }
            kinds = [found]
        } else {
            kinds = rooms.registry.allKinds
        }
        session.consecutiveErrors = 0
        let description = ServerMessage.description(id: id, kinds: kinds.map(\.protocolDescription))
        enqueue(.control(description.encoded()), for: session)
    }

    /// The kind a room name refers to; answers `unknown_room` (with the request's id) if none.
    func kind(forRoom name: String, id: Int?, session: Session) -> ViewModelKind? {
        switch rooms.kind(forRoom: name) {
        case .success(let kind):
            return kind
        case .failure(var error):
            error.id = id
            reject(error, session: session)
            return nil
        }
    }

    /// What `Admission` needs to know of this session in room `name`.
    func facts(of session: Session, in name: String) -> Admission.Facts {
        Admission.Facts(now: runtime.clock.secondsSince1970, joined: session.joined[name] != nil,
                        authorizedUntil: session.authorizedUntil[name], readOnlyFor: session.readOnly[name])
    }

    /// `joining`: a shared room counts the session as a member in the same step.
    func room(named name: String, kind: ViewModelKind, for session: Session, joining: Bool = false) -> any RoomEndpoint {
        switch kind.scope {
        case .shared:
            return rooms.sharedRoom(named: name, kind: kind, joining: joining)
        case .perSession:
            // Per-session rooms stay on the connection's node, in this process.
            if let room = session.privateRooms[name] { return room }
            let room = rooms.makePrivateRoom(named: name, kind: kind)
            session.privateRooms[name] = room
            return room
        }
    }

    // MARK: Refusals

    /// Answers an invalid request; a client that sends nothing valid for long enough is closed.
    func reject(_ error: ProtocolError, session: Session) {
        answer(error, session: session)
        session.consecutiveErrors += 1
        if session.consecutiveErrors >= configuration.maxConsecutiveErrors {
            logger.notice("closing connection \(session.id) from \(session.connection.remoteAddress): \(session.consecutiveErrors) invalid messages in a row")
            session.connection.close(code: 1008, reason: "too many invalid messages")
        }
    }

    /// A request `Admission` refused: by a limit, or for its token.
    func refuse(_ refusal: Admission.Refusal, id: Int?, room: String, session: Session) {
        let error = ProtocolError(refusal.code, refusal.message, id: id, room: room)
        if refusal.reason == .limited {
            limitHit(error, session: session)
        } else {
            refuse(error, session: session)
        }
    }

    /// A refused join or action (auth): worth a notice for the operator, and counted as invalid.
    func refuse(_ error: ProtocolError, session: Session) {
        logger.notice("refused \(error.room.map { "room \($0) " } ?? "")for connection \(session.id) from \(session.connection.remoteAddress): \(error.message)")
        reject(error, session: session)
    }

    /// A request refused by a limit (`rate_limited`). The limit already bounds such requests,
    /// so they don't count as invalid; the log shows the first per connection and a summary.
    func limitHit(_ error: ProtocolError, session: Session) {
        answer(error, session: session)
        shards.activity.withLock { $0.limitsHit += 1 }
        if !session.hitLimit {
            session.hitLimit = true
            logger.notice("connection \(session.id) from \(session.connection.remoteAddress) hit a limit: \(error.message)")
        }
    }

    func answer(_ error: ProtocolError, session: Session) {
        metrics.errorSent(error.code)
        enqueue(.control(ServerMessage.error(error).encoded()), for: session)
    }
}
