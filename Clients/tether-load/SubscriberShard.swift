import Dispatch
import Histogram
import Logging
import TetherProtocol
import TetherJSON
import TetherTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a subscriber shard tells the main thread.
struct SubscriberReport: Sendable {
    /// When the figures were taken (monotonic ns, on the loop thread).
    var at = 0
    var counters = SubscriberCounters()
    /// Latency since the previous report.
    var interval = makeLatencyHistogram()
    /// Latency over the measurement window so far.
    var window = makeLatencyHistogram()
    /// Connect (TCP + handshake + join + snapshot) times of first connections.
    var connectTimes = makeLatencyHistogram()
    /// Deliveries still missing against the final targets (after `setTargets`).
    var behind = 0
    /// A few error lines for the summary.
    var samples: [String] = []
}

/// A group of subscribers on one WebSocketClient (one lws context, one service thread). All of
/// its state is touched only on that thread: the main thread talks to it through `execute`.
///
/// The hot path (`received`) scans each frame with `FrameScanner`, checks the stream and records
/// latency into a histogram: no allocation, no lock, one clock read per frame.
final class SubscriberShard: @unchecked Sendable {
    let configuration: LoadConfiguration
    let client: WebSocketClient
    private let roomNames: [String]
    /// Room names as they appear, encoded, between the quotes of a frame's `room` member.
    private let encodedRoomNames: [[UInt8]]
    private var subscribers: [Subscriber] = []
    private let scanner = FrameScanner()
    private var counters = SubscriberCounters()
    private var interval = makeLatencyHistogram()
    private var window = makeLatencyHistogram()
    private var connectTimes = makeLatencyHistogram()
    private var measuring = false
    private var stopping = false
    private var samples: [String] = []
    private var targets: [Int]?
    private var random = SystemRandomNumberGenerator()
    /// Reconnects after a restart in flight, at most `reconnectSlots`; the others wait their turn
    /// in `reconnectQueue` (from `reconnectHead` on), so thousands of refused attempts a second
    /// don't swamp this loop while the server is away.
    private var reconnectsInFlight = 0
    private var reconnectQueue: [Subscriber] = []
    private var reconnectHead = 0
    private var reconnectSlots: Int {
        max(1, (configuration.maxInFlight > 0 ? configuration.maxInFlight : configuration.clients) / max(1, configuration.threads))
    }

    init(configuration: LoadConfiguration, logger: Logger) {
        self.configuration = configuration
        roomNames = configuration.roomNames
        encodedRoomNames = roomNames.map(encodedStringContents)
        var transport = WebSocketClientConfiguration()
        transport.maxMessageBytes = 64 << 20
        transport.pingInterval = nil  // the server pings; replying is enough
        transport.idleTimeout = nil
        transport.connectTimeout = .seconds(Int64(max(1, configuration.connectTimeout.rounded(.up))))
        transport.maxConnections = configuration.clients / configuration.threads + 64
        // The server is ours: skipping UTF-8 validation saves a pass over every byte.
        transport.validateUTF8 = false
        transport.trust = configuration.trust
        transport.compression = configuration.compression
        client = WebSocketClient(configuration: transport, logger: logger)
    }

    /// Creates the subscriber objects (call before `start`, from the main thread).
    func add(room: Int, url: String) {
        subscribers.append(Subscriber(shard: self, room: room, url: url, publishers: configuration.publishers,
                                      sourceAddress: configuration.sourceAddress(forSubscriber: subscribers.count)))
    }

    var count: Int { subscribers.count }

    // MARK: Commands from the main thread (run on the loop thread through `execute`)

    /// Starts the first connection of subscribers `range` (local indices).
    func connect(_ range: Range<Int>) {
        for index in range where index < subscribers.count {
            startConnecting(subscribers[index])
        }
    }

    /// Closes `count` random live subscribers; each reconnects at once and resumes.
    func churn(_ count: Int) {
        guard !subscribers.isEmpty else { return }
        for _ in 0..<count {
            var picked: Subscriber?
            for _ in 0..<8 {
                let candidate = subscribers[Int.random(in: 0..<subscribers.count, using: &random)]
                if candidate.phase == .live { picked = candidate; break }
            }
            guard let subscriber = picked, let connection = subscriber.connection else {
                counters.churnMissed += 1
                continue
            }
            subscriber.phase = .closing
            counters.live -= 1
            connection.close(code: 1000, reason: "churn")
        }
    }

    /// Takes the figures; `takeInterval` also hands over (and restarts) the progress interval's
    /// latency; `measure` switches the
    /// measurement window on (histogram emptied) or off.
    func report(measure: Bool? = nil, takeInterval: Bool = false) -> SubscriberReport {
        var report = SubscriberReport()
        report.at = monotonicNanos()
        report.counters = counters
        if takeInterval {
            report.interval = interval
            interval.reset()
        }
        if let measure {
            if measure { window.reset() }
            measuring = measure
        }
        report.window = window
        report.connectTimes = connectTimes
        report.samples = samples
        if let targets { report.behind = behind(targets) }
        return report
    }

    /// The counters alone (cheap: for polling; leaves the progress interval alone).
    var currentCounters: SubscriberCounters { counters }

    /// Deliveries still missing against the targets (0 before `setTargets`).
    var currentBehind: Int { targets.map(behind) ?? 0 }

    /// Records the final sequence counts (`targets[publisher * rooms + room]`), so reports carry
    /// how many deliveries are still missing.
    func setTargets(_ targets: [Int]) {
        self.targets = targets
    }

    /// The run is over: closes are expected from now on.
    func stop() {
        stopping = true
    }

    private func behind(_ targets: [Int]) -> Int {
        var missing = 0
        let rooms = configuration.rooms
        for subscriber in subscribers where subscriber.phase != .failed {
            for publisher in 0..<subscriber.nextSequence.count {
                let target = targets[publisher * rooms + subscriber.room]
                missing += max(0, target - subscriber.nextSequence[publisher])
            }
        }
        return missing
    }

    // MARK: Connections

    private func startConnecting(_ subscriber: Subscriber) {
        subscriber.phase = .connecting
        subscriber.connectStartedAt = monotonicNanos()
        if !subscriber.hasJoinedOnce { counters.connectsStarted += 1 }
        do {
            subscriber.connection = try client.connect(url: subscriber.url, subprotocol: TetherProtocol.subprotocol,
                                                       localAddress: subscriber.sourceAddress, delegate: subscriber)
        } catch {
            connectFailed(subscriber, reason: "\(error)")
        }
    }

    func connected(_ subscriber: Subscriber, _ connection: WebSocketConnection) {
        subscriber.connection = connection
        reconnectEnded(subscriber)
        // The first reconnect to open after a close we did not ask for: the server is back.
        if subscriber.closedAt > 0, counters.firstReopenAt == 0 { counters.firstReopenAt = monotonicNanos() }
        subscriber.retries = 0
        var since: ResumePoint?
        if subscriber.version >= 0 {
            since = ResumePoint(epoch: String(decoding: subscriber.epoch, as: UTF8.self), version: subscriber.version)
        }
        subscriber.resuming = since != nil
        subscriber.phase = .joining
        let join = ClientMessage.join(room: roomNames[subscriber.room], since: since, token: configuration.token,
                                      presence: configuration.presence ? ["name": "tether-load"] : nil).encoded()
        join.withUnsafeBytes { _ = connection.sendText($0) }
    }

    func connectFailed(_ subscriber: Subscriber, reason: String) {
        subscriber.connection = nil
        reconnectEnded(subscriber)
        if subscriber.hasJoinedOnce, configuration.expectRestart, !stopping,
           monotonicNanos() - subscriber.closedAt < Self.restartPatience {
            counters.reconnectRetries += 1
            retryLater(subscriber)
            return
        }
        subscriber.phase = .failed
        if subscriber.hasJoinedOnce {
            counters.reconnectFailures += 1
            sample("reconnect failed: \(reason)")
        } else {
            counters.connectFailures += 1
            sample("connect failed: \(reason)")
        }
    }

    func closed(_ subscriber: Subscriber, code: UInt16?) {
        subscriber.connection = nil
        let wasLive = subscriber.phase == .live
        if wasLive { counters.live -= 1 }
        if stopping { subscriber.phase = .idle; return }
        if subscriber.phase != .closing {
            subscriber.closedAt = monotonicNanos()
            if configuration.expectRestart && (code == 1001 || code == nil || code == 1006) {
                // The server is going away (a 1001, or the socket cut when its shutdown deadline
                // passed with connections left): knock again after a jittered pause, not all at once.
                counters.restartCloses += 1
                counters.reconnects += 1
                retryLater(subscriber)
                return
            }
            counters.disconnects += 1
            sample("server closed a subscriber (code \(code.map(String.init) ?? "none"))")
        }
        counters.reconnects += 1
        startConnecting(subscriber)
    }

    /// How long a subscriber keeps retrying after a close while the server restarts.
    static let restartPatience = 60_000_000_000

    /// Retries a refused reconnect after an exponential backoff (20 ms doubling to 1 s) with
    /// jitter (half to all of it), so thousands of subscribers don't knock in lockstep.
    private func retryLater(_ subscriber: Subscriber) {
        subscriber.phase = .connecting
        let ceiling = min(1.0, 0.02 * Double(1 << min(subscriber.retries, 6)))
        subscriber.retries += 1
        let delay = Double.random(in: (ceiling / 2)...ceiling, using: &random)
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [client, self] in
            _ = client.execute { [self] in
                guard !stopping else { return }
                if reconnectsInFlight < reconnectSlots {
                    startReconnect(subscriber)
                } else {
                    reconnectQueue.append(subscriber)
                }
            }
        }
    }

    private func startReconnect(_ subscriber: Subscriber) {
        reconnectsInFlight += 1
        subscriber.isReconnecting = true
        startConnecting(subscriber)
    }

    /// A reconnect attempt ended (opened or refused): the next waiting one may start.
    private func reconnectEnded(_ subscriber: Subscriber) {
        guard subscriber.isReconnecting else { return }
        subscriber.isReconnecting = false
        reconnectsInFlight -= 1
        guard !stopping, reconnectHead < reconnectQueue.count else { return }
        let next = reconnectQueue[reconnectHead]
        reconnectHead += 1
        if reconnectHead == reconnectQueue.count {
            reconnectQueue.removeAll(keepingCapacity: true)
            reconnectHead = 0
        }
        startReconnect(next)
    }

    private func becameLive(_ subscriber: Subscriber) {
        subscriber.phase = .live
        counters.live += 1
        if !subscriber.hasJoinedOnce {
            subscriber.hasJoinedOnce = true
            counters.joined += 1
            recordMicroseconds(&connectTimes, nanoseconds: monotonicNanos() - subscriber.connectStartedAt)
        } else if subscriber.resuming {
            counters.lastResumeAt = monotonicNanos()
        }
    }

    // MARK: Frames (hot path)

    // MARK: Batching

    /// While frames flow, the loop thread pauses `batchNanos` after each round of lws service
    /// (a closure re-posted through `execute` runs once per round and sleeps), so the next
    /// poll() finds many sockets ready instead of one. lws polls every socket of the context on
    /// each round, so with thousands of connections the poll, not the frames, would otherwise
    /// dominate tether-load's CPU. The pause stops as soon as a round brings no frame, so idle
    /// connections cost nothing; it adds at most `batchNanos` to a measured latency.
    private var batching = false
    private var framesAtLastPause = 0

    private func startBatching() {
        guard configuration.batchNanos > 0, !batching, !stopping else { return }
        batching = true
        framesAtLastPause = counters.frames
        client.execute { [self] in pauseRound() }
    }

    private func pauseRound() {
        guard counters.frames != framesAtLastPause, !stopping else {
            batching = false  // a round with no frame: back to blocking in poll()
            return
        }
        framesAtLastPause = counters.frames
        var pause = timespec(tv_sec: 0, tv_nsec: configuration.batchNanos)
        nanosleep(&pause, nil)
        client.execute { [self] in pauseRound() }
    }

    func received(_ payload: UnsafeRawBufferPointer, for subscriber: Subscriber) {
        counters.frames += 1
        if !batching { startBatching() }
        guard subscriber.phase == .live || subscriber.phase == .joining else { return }
        if scanner.scan(payload) == .patch {
            guard scanner.roomEquals(encodedRoomNames[subscriber.room], in: payload) else {
                violation("patch for another room")
                return
            }
            let sameEpoch = scanner.epochEquals(subscriber.epoch, in: payload)
            if configuration.verifyScanner { verifyScan(payload) }
            acceptPatch(subscriber, sameEpoch: sameEpoch, from: scanner.from, version: scanner.version,
                        operations: UnsafeBufferPointer(start: scanner.operations, count: scanner.operationCount))
        } else if configuration.presence, payload.starts(with: Self.presencePrefix) {
            // `presence` and `presence_patch`, counted unread: a snapshot of 1,000 members is
            // 70 KB, and decoding one per join would make this client, not the server, the limit.
            counters.presenceFrames += 1
        } else {
            decodeAndHandle(payload, for: subscriber)
        }
    }

    private static let presencePrefix = Array(#"{"type":"presence"#.utf8)

    private func acceptPatch(_ subscriber: Subscriber, sameEpoch: Bool, from: Int, version: Int,
                             operations: UnsafeBufferPointer<ScannedOperation>) {
        counters.patchFrames += 1
        if version - from > 1 { counters.mergedFrames += 1 }
        if subscriber.phase == .joining {
            // After a join only a resume may start with a patch, and only from our version.
            if subscriber.resuming && sameEpoch && from == subscriber.version {
                counters.resumesFromHistory += 1
                becameLive(subscriber)
            } else {
                counters.outOfOrder += 1
                sample("a patch came before the snapshot after a join (from \(from), resume: \(subscriber.resuming))")
                return
            }
        } else if !sameEpoch || from != subscriber.version {
            counters.gaps += 1
            sample("gap: patch from \(from) to \(version) after version \(subscriber.version)\(sameEpoch ? "" : " (new epoch)")")
        }
        if version < from {
            counters.outOfOrder += 1
            sample("patch version \(version) below its from \(from)")
        }
        subscriber.version = version

        let now = monotonicNanos()
        let runTag = configuration.runTag
        let publishers = subscriber.nextSequence.count
        for operation in operations {
            let publisher = operation.publisher
            guard operation.run == runTag, publisher >= 0, publisher < publishers, operation.sequence >= 0 else {
                counters.foreignOperations += 1
                continue
            }
            let expected = subscriber.nextSequence[publisher]
            if operation.sequence < expected {
                counters.duplicates += 1
                continue
            }
            if operation.sequence > expected {
                counters.lost += operation.sequence - expected
                sample("lost: sequence \(expected)..<\(operation.sequence) of publisher \(publisher) never arrived")
            }
            subscriber.nextSequence[publisher] = operation.sequence + 1
            counters.deliveries += 1
            recordMicroseconds(&interval, nanoseconds: now - operation.sentAt)
            if measuring { recordMicroseconds(&window, nanoseconds: now - operation.sentAt) }
        }
    }

    // MARK: Other messages (full decoder)

    private func decodeAndHandle(_ payload: UnsafeRawBufferPointer, for subscriber: Subscriber) {
        counters.decodedFrames += 1
        let message: ServerMessage
        do {
            message = try ServerMessage.decode(payload)
        } catch {
            violation("undecodable frame: \(error.message)")
            return
        }
        switch message {
        case .hello(let version, _, _):
            if version != TetherProtocol.version { violation("hello with protocol \(version)") }
        case .snapshot(let room, let epoch, let version, let state):
            guard room == roomNames[subscriber.room] else {
                violation("snapshot for another room (\(room))")
                return
            }
            acceptSnapshot(subscriber, epoch: encodedStringContents(epoch), version: version, state: state)
        case .patch(let room, let epoch, let from, let version, let operations):
            // Only if the scanner could not read it (it should): same checks, slower.
            guard room == roomNames[subscriber.room] else {
                violation("patch for another room (\(room))")
                return
            }
            let scanned = operations.map(Self.scannedOperation)
            scanned.withUnsafeBufferPointer { buffer in
                acceptPatch(subscriber, sameEpoch: encodedStringContents(epoch) == subscriber.epoch,
                            from: from, version: version, operations: buffer)
            }
        case .presence where configuration.presence, .presencePatch where configuration.presence:
            counters.presenceFrames += 1
        case .ack, .description, .presence, .presencePatch:
            violation("a subscriber got an unrequested \(message)")
        case .error(let error):
            counters.errors += 1
            sample("error \(error.code.rawValue): \(error.message)")
        }
    }

    private func acceptSnapshot(_ subscriber: Subscriber, epoch: [UInt8], version: Int, state: JSON) {
        var fresh = Array(repeating: 0, count: subscriber.nextSequence.count)
        if case .object(let document)? = state.objectMember("fields") {
            for (_, value) in document {
                guard case .object(let fields) = value,
                      fields["r"]?.intValue == configuration.runTag,
                      let publisher = fields["i"]?.intValue, publisher >= 0, publisher < fresh.count,
                      let sequence = fields["s"]?.intValue else { continue }
                fresh[publisher] = sequence + 1
            }
        }
        let restart = subscriber.version >= 0  // not this subscriber's first snapshot
        if restart {
            if epoch == subscriber.epoch && version < subscriber.version {
                counters.outOfOrder += 1
                sample("snapshot at version \(version) older than version \(subscriber.version) already seen")
            }
            for publisher in 0..<fresh.count {
                let skipped = fresh[publisher] - subscriber.nextSequence[publisher]
                if skipped > 0 { counters.skippedBySnapshot += skipped }
            }
        }
        if subscriber.phase == .joining {
            if subscriber.resuming { counters.resumesWithSnapshot += 1 }
            becameLive(subscriber)
        } else if restart {
            counters.resyncs += 1
        }
        subscriber.epoch = epoch
        subscriber.version = version
        subscriber.nextSequence = fresh
    }

    private static func scannedOperation(_ operation: PatchOperation) -> ScannedOperation {
        var scanned = ScannedOperation()
        switch operation {
        case .add(_, let value), .replace(_, let value):
            guard case .object(let fields) = value else { return scanned }
            scanned.publisher = fields["i"]?.intValue ?? -1
            scanned.sequence = fields["s"]?.intValue ?? -1
            scanned.sentAt = fields["t"]?.intValue ?? -1
            scanned.run = fields["r"]?.intValue ?? -1
        default:
            break
        }
        return scanned
    }

    /// Self-check (`--verify-scanner`): the full decoder must read the same figures.
    private func verifyScan(_ payload: UnsafeRawBufferPointer) {
        guard case .patch(_, _, let from, let version, let operations)? = try? ServerMessage.decode(payload) else {
            violation("scanner: the decoder does not read this frame as a patch")
            return
        }
        let scanned = UnsafeBufferPointer(start: scanner.operations, count: scanner.operationCount)
        let decoded = operations.map(Self.scannedOperation)
        let same = from == scanner.from && version == scanner.version && decoded.count == scanned.count
            && zip(decoded, scanned).allSatisfy { a, b in
                a.publisher == b.publisher && a.sequence == b.sequence && a.sentAt == b.sentAt && a.run == b.run
            }
        if !same { violation("scanner and decoder disagree on a frame") }
    }

    func violation(_ what: String) {
        counters.protocolErrors += 1
        sample(what)
    }

    private func sample(_ line: String) {
        if samples.count < 8 { samples.append(line) }
    }
}

extension JSON {
    func objectMember(_ key: String) -> JSON? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }
}
