/// Counters of one subscriber shard. Monotonic except `live`.
struct SubscriberCounters: Sendable {
    var connectsStarted = 0
    /// Subscribers whose first join was answered (snapshot received).
    var joined = 0
    /// First connections that failed (a setup error).
    var connectFailures = 0
    /// Joined and open right now.
    var live = 0
    var frames = 0
    var patchFrames = 0
    /// Patch frames spanning several versions (merged by the server).
    var mergedFrames = 0
    /// Frames the byte scanner handed to the full decoder (hello, snapshot, error...).
    var decodedFrames = 0
    /// Operations carrying one of our sequence numbers: one delivery each.
    var deliveries = 0
    /// Operations written by someone else (another run, another tool).
    var foreignOperations = 0
    /// Sequence numbers never seen by a subscriber (skipped in its patch stream).
    var lost = 0
    var duplicates = 0
    /// Patches whose `from` is not the previous `version`, or whose epoch changed without a snapshot.
    var gaps = 0
    /// Patches with `version` below `from`, patches before the first snapshot, older snapshots.
    var outOfOrder = 0
    /// Snapshots after the stream started (the server resynchronised a slow client).
    var resyncs = 0
    /// `presence` and `presence_patch` frames (--presence).
    var presenceFrames = 0
    /// Sequence numbers jumped over by such snapshots (legal, but not delivered as patches).
    var skippedBySnapshot = 0
    /// `error` messages received.
    var errors = 0
    /// Frames that did not decode, or messages a subscriber should never get.
    var protocolErrors = 0
    /// Connections closed that we did not close (then reconnected with resume).
    var disconnects = 0
    /// Reconnects started (churn and after disconnects).
    var reconnects = 0
    var reconnectFailures = 0
    var resumesFromHistory = 0
    var resumesWithSnapshot = 0
    /// Churn requests that found no live subscriber to close.
    var churnMissed = 0
    /// Going-away closes (1001) under --expect-restart: the server stopping, not a failure.
    var restartCloses = 0
    /// Reconnect attempts repeated after a refused connection (--expect-restart).
    var reconnectRetries = 0
    /// Monotonic ns: the first reconnect after a close that opened, and the last resume (0: none).
    /// Merged by min and max, not summed.
    var firstReopenAt = 0
    var lastResumeAt = 0

    mutating func add(_ o: SubscriberCounters) {
        connectsStarted += o.connectsStarted; joined += o.joined; connectFailures += o.connectFailures
        live += o.live; frames += o.frames; patchFrames += o.patchFrames; mergedFrames += o.mergedFrames
        decodedFrames += o.decodedFrames; deliveries += o.deliveries; foreignOperations += o.foreignOperations
        lost += o.lost; duplicates += o.duplicates; gaps += o.gaps; outOfOrder += o.outOfOrder
        resyncs += o.resyncs; presenceFrames += o.presenceFrames; skippedBySnapshot += o.skippedBySnapshot; errors += o.errors
        protocolErrors += o.protocolErrors; disconnects += o.disconnects; reconnects += o.reconnects
        reconnectFailures += o.reconnectFailures; resumesFromHistory += o.resumesFromHistory
        resumesWithSnapshot += o.resumesWithSnapshot; churnMissed += o.churnMissed
        restartCloses += o.restartCloses; reconnectRetries += o.reconnectRetries
        if o.firstReopenAt > 0 { firstReopenAt = firstReopenAt == 0 ? o.firstReopenAt : min(firstReopenAt, o.firstReopenAt) }
        lastResumeAt = max(lastResumeAt, o.lastResumeAt)
    }

    /// Stream violations: any of these fails the run.
    var violations: Int { lost + duplicates + gaps + outOfOrder + protocolErrors }
}
