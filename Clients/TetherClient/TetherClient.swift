import Dispatch
import Logging
import TetherBinding
import TetherProtocol
import TetherJSON
import TetherTransport

/// A connection to a Tether server that mirrors rooms as observables.
///
/// ```swift
/// let client = TetherClient(options: ClientOptions(url: "ws://127.0.0.1:8080"))
/// try client.connect()
/// let clock = client.room("clock")
/// clock.observable("/time", as: String.self, default: "").bind { label.text = $0 }.store(in: bag)
/// try await client.room("counter").send("increment", ["by": 2])
/// ```
///
/// Everything here runs on the main actor, like a UI's view models: observables fire there, so
/// widgets bind to remote state exactly as to local state. The client reconnects on its own
/// (exponential backoff with jitter) and rejoins every room with `since`, so a short outage
/// costs patches, not snapshots. Actions are numbered, queued while not connected and sent again
/// after a drop, so each runs once and `send` returns its real outcome (docs/CLIENTS.md, "Actions").
@MainActor
public final class TetherClient {
    public let options: ClientOptions
    private let stateStorage = Observable(ConnectionState.connecting)
    /// Connecting, live, reconnecting, resynced, closed.
    public var connectionState: ReadOnlyObservable<ConnectionState> { stateStorage }
    /// The round trip of the last acknowledged action (from its first send to the ack).
    public let lastActionLatency = Observable<Duration?>(nil)
    private let pendingStorage = Observable<[PendingAction]>([])
    /// Actions waiting for their answers, in order: queued, or sent and not yet answered.
    public var pendingActions: ReadOnlyObservable<[PendingAction]> { pendingStorage }
    /// The session id from the server's `hello`.
    public private(set) var session: String?
    /// Every frame received, decoded and raw (for `tether watch`, inspectors, logs).
    public var onMessage: ((ServerMessage, [UInt8]) -> Void)?
    /// Frames that did not decode; they are otherwise ignored.
    public var onUndecodable: ((ProtocolError, [UInt8]) -> Void)?
    /// Errors from the server that answer no pending action (e.g. a failed join).
    public var onServerError: ((ProtocolError) -> Void)?

    let logger: Logger
    private var transport: WebSocketClient?
    private var link: Link?
    /// Counts links, so events of a replaced link are ignored.
    private var linkGeneration = 0
    private var reconnectAttempt = 0
    private(set) var isClosed = false
    private var rooms: [String: RemoteRoom] = [:]
    private var actions: ActionQueue
    /// The callers of `send`, by action number.
    private var actionWaiters: [Int: ActionWaiter] = [:]
    /// Requests that are not actions (presence updates), by request id.
    private var requests: [Int: CheckedContinuation<Int, any Error>] = [:]
    private var urlIndex = 0
    private var pendingDescriptions: [Int: CheckedContinuation<[KindDescription], any Error>] = [:]
    private var nextRequestID = 1
    private var helloWaiters: [CheckedContinuation<Void, any Error>] = []
    /// When the queue's next pausing action is due to go again (one timer at a time).
    private var retryScheduledAt: ContinuousClock.Instant?

    private struct ActionWaiter {
        let continuation: CheckedContinuation<Int, any Error>
        var firstSentAt: ContinuousClock.Instant?
    }

    public init(options: ClientOptions, logger: Logger = Logger(label: "tether.client")) {
        self.options = options
        self.logger = logger
        actions = ActionQueue(capacity: options.maxQueuedActions)
    }

    /// Starts connecting (and reconnecting). Throws at once for a URL that cannot work.
    public func connect() throws {
        guard transport == nil else { return }
        transport = try SharedTransport.client(trust: options.trust, maxMessageBytes: options.maxMessageBytes, logger: logger)
        try openLink()
    }

    /// Waits for the server's `hello`; throws when the connection fails and reconnecting is off.
    public func waitUntilConnected() async throws {
        if session != nil, connectionState.value.isConnected { return }
        if case .closed(let reason) = connectionState.value { throw TetherClientError.notConnected(reason) }
        try await withCheckedThrowingContinuation { helloWaiters.append($0) }
    }

    /// The mirror of `name`, joined now (or at the next connection).
    ///
    /// With `since`, the first join resumes after that version: the server sends the patches
    /// after it (or a snapshot when it no longer has them). Until a snapshot arrives the mirror
    /// follows versions but has no state (`hasState` is false): this is for following changes
    /// from a known point, as `tether watch --since` does.
    public func room(_ name: String, since: ResumePoint? = nil) -> RemoteRoom {
        if let room = rooms[name] { return room }
        let room = RemoteRoom(name: name, client: self, since: since)
        rooms[name] = room
        if session != nil { join(room) }
        return room
    }

    /// Closes the connection for good. Actions still queued fail with `.notSent`; those sent and
    /// unanswered with `.closed` (they may have been applied: the answer will not be heard).
    public func close() async {
        guard !isClosed else { return }
        isClosed = true
        link?.close()
        failRequests(TetherClientError.closed)
        for action in actions.removeAll() {
            finish(action.seq, room: action.room, .failure(action.wasSent ? .closed : .notSent("the client was closed first")))
        }
        publishPending()
        stateStorage.value = .closed(reason: "closed by the client")
        for room in rooms.values { room.contractRooms = [:] }  // they hold their mirror: a cycle to break
    }

    // MARK: Actions

    /// Sends `action` to `room` and returns the version of its ack, or throws the server's error
    /// (`TetherClientError.server`), once, with the server's outcome (docs/CLIENTS.md, "Actions").
    ///
    /// The action is numbered; while not connected it waits in the queue, and fails with
    /// `.notSent` if it could not be sent within `timeout` (default `ClientOptions.actionTimeout`).
    /// Once sent it waits for its answer, and goes again under its number after a lost
    /// connection: it runs once. Only `close()` leaves an answer unheard (`.closed`).
    @discardableResult
    ///
    /// `predict` runs at once on the mirror of `room` (when this client has one), until the answer
    /// (`RemoteRoom.send(_:_:predict:)`).
    public func send(_ action: String, to room: String, args: JSON? = nil, timeout: Duration? = nil,
                     predict: ((inout JSON) -> Void)? = nil) async throws -> Int {
        guard !isClosed else { throw TetherClientError.notSent("the client is closed") }
        let seq = try actions.add(room: room, name: action, args: args)
        let timeout = timeout ?? options.actionTimeout
        if let predict, let mirror = rooms[room] { mirror.addPrediction(seq: seq, predict) }
        publishPending()
        return try await withCheckedThrowingContinuation { continuation in
            actionWaiters[seq] = ActionWaiter(continuation: continuation)
            sendQueuedActions()
            Task { @MainActor [weak self] in
                try? await Task.sleep(for: timeout)
                self?.expire(seq, after: timeout)
            }
        }
    }

    /// Sends what the queue has ready, when connected.
    private func sendQueuedActions() {
        guard let link, session != nil, !isClosed else { return }
        let now = ContinuousClock.now
        let ready = actions.take(now: now) {
            defer { nextRequestID += 1 }
            return nextRequestID
        }
        for action in ready {
            guard let id = action.requestID else { continue }
            if actionWaiters[action.seq]?.firstSentAt == nil { actionWaiters[action.seq]?.firstSentAt = now }
            link.send(ClientMessage.action(room: action.room, name: action.name, args: action.args, id: id, seq: action.seq).encoded())
        }
        if !ready.isEmpty { publishPending() }
        scheduleRetry()
    }

    /// Wakes the queue when its next pausing action may go again.
    private func scheduleRetry() {
        guard let due = actions.nextRetry, retryScheduledAt.map({ due < $0 }) ?? true else { return }
        retryScheduledAt = due
        Task { @MainActor [weak self] in
            try? await Task.sleep(until: due)
            guard let self, self.retryScheduledAt == due else { return }
            self.retryScheduledAt = nil
            self.sendQueuedActions()
        }
    }

    /// Action `seq`'s time to be sent ran out: if it is still unsent, it never will be.
    private func expire(_ seq: Int, after timeout: Duration) {
        guard let action = actions.expire(seq: seq) else { return }
        publishPending()
        finish(seq, room: action.room, .failure(.notSent("not connected within \(timeout) (\(connectionState.value))")))
    }

    /// Answers the caller of action `seq`; its prediction goes first, so that nothing shows it
    /// after the answer.
    private func finish(_ seq: Int, room: String, _ result: Result<Int, TetherClientError>) {
        rooms[room]?.dropPrediction(seq: seq)
        guard let waiter = actionWaiters.removeValue(forKey: seq) else { return }
        switch result {
        case .success(let version):
            if let sentAt = waiter.firstSentAt { lastActionLatency.value = .now - sentAt }
            waiter.continuation.resume(returning: version)
        case .failure(let error):
            waiter.continuation.resume(throwing: error)
        }
    }

    private func publishPending() {
        let pending = actions.pending
        if pending != pendingStorage.value { pendingStorage.value = pending }
    }

    /// Sends the request `message(id)` (not an action) and waits for its ack (its version, 0
    /// without) or error.
    @discardableResult
    func request(_ message: (Int) -> ClientMessage) async throws -> Int {
        guard let link, session != nil, !isClosed else {
            throw TetherClientError.notConnected(connectionState.value.description)
        }
        let id = nextRequestID
        nextRequestID += 1
        let frame = message(id).encoded()
        let timeout = options.actionTimeout
        return try await withCheckedThrowingContinuation { continuation in
            requests[id] = continuation
            link.send(frame)
            Task { @MainActor [weak self] in
                try? await Task.sleep(for: timeout)
                self?.requests.removeValue(forKey: id)?.resume(throwing: TetherClientError.timedOut)
            }
        }
    }

    // MARK: Discovery

    /// The server's description of room kind `kind` (nil: of every kind): scope, actions and
    /// their argument fields. Throws the server's error (`unknown_room` for an unknown kind;
    /// `bad_message` from a server too old to know `describe`).
    public func describe(kind: String? = nil) async throws -> [KindDescription] {
        guard let link, session != nil, !isClosed else {
            throw TetherClientError.notConnected(connectionState.value.description)
        }
        let id = nextRequestID
        nextRequestID += 1
        let frame = ClientMessage.describe(kind: kind, id: id).encoded()
        let timeout = options.actionTimeout
        return try await withCheckedThrowingContinuation { continuation in
            pendingDescriptions[id] = continuation
            link.send(frame)
            Task { @MainActor [weak self] in
                try? await Task.sleep(for: timeout)
                self?.pendingDescriptions.removeValue(forKey: id)?.resume(throwing: TetherClientError.timedOut)
            }
        }
    }

    // MARK: Links

    private func openLink() throws {
        linkGeneration += 1
        let generation = linkGeneration
        guard let transport else { return }
        let link = Link(transport: transport) { [weak self] event in
            DispatchQueue.main.async {
                MainActor.assumeIsolated { self?.handle(event, generation: generation) }
            }
        }
        self.link = link
        try link.start(url: currentURL, compression: options.compression)
    }

    /// The URL connected to now; after a lost connection the next one of `options.urls` is tried.
    public var currentURL: String {
        let urls = options.urls
        return urls[urlIndex % urls.count]
    }

    private func handle(_ event: Link.Event, generation: Int) {
        guard generation == linkGeneration, !isClosed else { return }
        switch event {
        case .opened:
            break  // live once the hello arrives
        case .failed(let reason):
            linkLost("cannot connect to \(currentURL): \(Self.withoutEndpoint(reason))")
        case .closed(let code):
            linkLost(code.map { "connection closed (\($0))" } ?? "connection lost")
        case .undecodable(let error, let raw):
            logger.warning("ignoring an undecodable frame from the server: \(error)")
            onUndecodable?(error, raw)
        case .message(let message, let raw):
            onMessage?(message, raw)
            receive(message)
        }
    }

    private func receive(_ message: ServerMessage) {
        switch message {
        case .hello(_, _, let session):
            self.session = session
            reconnectAttempt = 0
            stateStorage.value = .live
            link?.send(ClientMessage.hello(client: options.clientID, user: options.user).encoded())
            for room in rooms.values { join(room) }
            sendQueuedActions()  // the resends first: they have the lowest numbers
            let waiters = helloWaiters
            helloWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        case .snapshot(let room, let epoch, let version, let state):
            rooms[room]?.receiveSnapshot(epoch: epoch, version: version, state: state)
        case .patch(let room, let epoch, let from, let version, let operations):
            rooms[room]?.receivePatch(epoch: epoch, from: from, version: version, operations: operations)
        case .presence(let room, let version, let members):
            rooms[room]?.receivePresence(version: version, members: members)
        case .presencePatch(let room, let from, let version, let operations):
            rooms[room]?.receivePresencePatch(from: from, version: version, operations: operations)
        case .ack(let id, _, let version):
            if case .acknowledged(let action, let version) = actions.acknowledge(requestID: id, version: version ?? 0) {
                publishPending()
                finish(action.seq, room: action.room, .success(version))
                sendQueuedActions()  // the window moved
            } else {
                requests.removeValue(forKey: id)?.resume(returning: version ?? 0)
            }
        case .description(let id, let kinds):
            if let id { pendingDescriptions.removeValue(forKey: id)?.resume(returning: kinds) }
        case .error(let error):
            if let id = error.id, let outcome = actions.fail(requestID: id, error, now: .now) {
                if case .failed(let action, let error) = outcome {
                    finish(action.seq, room: action.room, .failure(.server(error)))
                    sendQueuedActions()
                } else {
                    logger.debug("action \(id) answered \(error.code.rawValue) (\(error.applied)); sending it again")
                    scheduleRetry()
                }
                publishPending()
            } else if let id = error.id, let request = requests.removeValue(forKey: id) {
                request.resume(throwing: TetherClientError.server(error))
            } else if let id = error.id, let waiter = pendingDescriptions.removeValue(forKey: id) {
                waiter.resume(throwing: TetherClientError.server(error))
            } else if error.code == .roomDeleted, let name = error.room, let room = rooms.removeValue(forKey: name) {
                // Its stream ended: the mirror keeps its last state and stops; `room(name)` joins
                // the new, empty room (a reconnect does not, as for a room left).
                room.wasDeleted(error)
                onServerError?(error)
            } else {
                if let name = error.room { rooms[name]?.lastError.value = error }
                onServerError?(error)
            }
        }
    }

    private func linkLost(_ reason: String) {
        link = nil
        session = nil
        // Who was here is unknown until the rejoin's presence snapshot: show nobody, not a stale list.
        for room in rooms.values { room.forgetPresence() }
        actions.connectionLost()
        publishPending()
        failRequests(TetherClientError.notConnected("the connection dropped before the answer: \(reason)"))
        guard options.reconnect.isEnabled else {
            stateStorage.value = .closed(reason: reason)
            let waiters = helloWaiters
            helloWaiters.removeAll()
            for waiter in waiters { waiter.resume(throwing: TetherClientError.notConnected(reason)) }
            return
        }
        reconnectAttempt += 1
        urlIndex += 1  // with several URLs (a cluster's nodes), the next node
        let attempt = reconnectAttempt
        stateStorage.value = .reconnecting(attempt: attempt, reason: reason)
        let delay = options.reconnect.delay(forAttempt: attempt)
        Task { @MainActor [weak self] in
            try? await Task.sleep(for: delay)
            guard let self, !self.isClosed, self.reconnectAttempt == attempt, self.link == nil else { return }
            do {
                try self.openLink()
            } catch {
                self.linkLost("\(error)")
            }
        }
    }

    /// The transport's "ws://host:port/: why" as "why": the URL is already in the sentence.
    static func withoutEndpoint(_ reason: String) -> String {
        guard reason.hasPrefix("ws://") || reason.hasPrefix("wss://"), let separator = reason.firstRange(of: ": ") else { return reason }
        return String(reason[separator.upperBound...])
    }

    /// Fails the requests that are not actions: their answers can only come on this connection.
    private func failRequests(_ error: TetherClientError) {
        let requests = self.requests
        self.requests.removeAll()
        for request in requests.values { request.resume(throwing: error) }
        let descriptions = pendingDescriptions
        pendingDescriptions.removeAll()
        for waiter in descriptions.values { waiter.resume(throwing: error) }
    }

    // MARK: Rooms

    /// Sends a join for `room`: with `since` when its mirror has a version to resume from.
    func join(_ room: RemoteRoom, resume: Bool = true) {
        room.willJoin()
        let since = resume ? room.resumePoint : nil
        link?.send(ClientMessage.join(room: room.name, since: since, token: options.token, presence: room.presenceData,
                                      watchPresence: room.presenceData == nil && options.watchPresence).encoded())
    }

    func leave(_ room: RemoteRoom) {
        rooms[room.name] = nil
        link?.send(ClientMessage.leave(room: room.name).encoded())
    }

    func roomResynced(_ room: RemoteRoom) {
        stateStorage.value = .resynced(room: room.name)
    }
}
