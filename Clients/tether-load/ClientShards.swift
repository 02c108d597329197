import Logging

/// Every connection of a run: the subscriber shards (one WebSocketClient, i.e. one lws context
/// and loop thread, each) and the publishers' shard. Subscriber g joins room g % rooms and runs
/// on shard g % threads, as that shard's local index g / threads. The main thread reaches the
/// shards only through their loop threads (`execute`, `onLoop`).
final class ClientShards {
    let subscribers: [SubscriberShard]
    let publishers: PublisherShard?

    init(configuration c: LoadConfiguration, logger: Logger) {
        let shards = (0..<c.threads).map { _ in SubscriberShard(configuration: c, logger: logger) }
        for g in 0..<c.clients { shards[g % c.threads].add(room: c.room(ofSubscriber: g), url: c.url(ofConnection: g)) }
        subscribers = shards
        publishers = c.rate > 0 ? PublisherShard(configuration: c, logger: logger) : nil
    }

    /// Starts every loop thread.
    func start() throws {
        for shard in subscribers { try shard.client.start() }
        try publishers?.client.start()
    }

    /// Marks every shard stopping (closes are expected from then on) and shuts its client down.
    func shutdown() {
        for shard in subscribers { shard.client.execute { shard.stop() }; shard.client.shutdown(deadline: .seconds(3)) }
        if let publishers {
            publishers.client.execute { publishers.stop() }
            publishers.client.shutdown(deadline: .seconds(2))
        }
    }

    // MARK: Commands

    /// Starts the first connection of the subscribers with global indices `range`.
    func connectSubscribers(_ range: Range<Int>) {
        let t = subscribers.count
        for (s, shard) in subscribers.enumerated() {
            let lower = (range.lowerBound - s + t - 1) / t
            let upper = (range.upperBound - s + t - 1) / t
            if upper > lower { shard.client.execute { shard.connect(lower..<upper) } }
        }
    }

    func connectPublishers() {
        guard let publishers else { return }
        publishers.client.execute { publishers.connectAll() }
    }

    /// Closes `count` random live subscribers (each reconnects and resumes), spread over the
    /// shards in turn from the `first`-th request of the run.
    func churn(_ count: Int, startingAt first: Int) {
        var perShard = Array(repeating: 0, count: subscribers.count)
        for k in first..<(first + count) { perShard[k % subscribers.count] += 1 }
        for (shard, n) in zip(subscribers, perShard) where n > 0 {
            shard.client.execute { shard.churn(n) }
        }
    }

    /// Hands every subscriber shard the final sequence counts, so it can tell what is missing.
    func setTargets(_ targets: [Int]) {
        for shard in subscribers { shard.client.execute { shard.setTargets(targets) } }
    }

    // MARK: Readings (round trips to the loop threads)

    var subscriberCounters: SubscriberCounters {
        var total = SubscriberCounters()
        for shard in subscribers {
            if let counters = onLoop(shard.client, { shard.currentCounters }) { total.add(counters) }
        }
        return total
    }

    var publisherCounters: PublisherCounters? {
        publishers.flatMap { p in onLoop(p.client) { p.currentCounters } }
    }

    /// Deliveries still missing against the targets, over every subscriber.
    var behind: Int {
        subscribers.reduce(0) { sum, shard in sum + (onLoop(shard.client) { shard.currentBehind } ?? 0) }
    }
}
