import Foundation
import Testing
import TetherNATS
import TetherTestSupport

/// Both results of two publishes sent at the same moment on two connections.
func race(_ first: @escaping (@escaping @Sendable (Result<UInt64, NATSError>) -> Void) -> Void,
          _ second: @escaping (@escaping @Sendable (Result<UInt64, NATSError>) -> Void) -> Void) async -> [Result<UInt64, NATSError>] {
    let results = Collector<Result<UInt64, NATSError>>()
    first { results.append($0) }
    second { results.append($0) }
    return (try? await results.wait(for: 2, timeout: .seconds(30))) ?? results.all
}

extension NATS {
    @Suite struct JetStreamTests {
        /// A new 3-server cluster's first stream, created again while no JetStream API answers
        /// (for up to 30 s): on a loaded 2-core machine the first request after the meta leader's
        /// election outlasted the context's timeout once (CI rehearsal, 2026-11-29).
        static func createStream(_ js: JetStream, _ configuration: JetStream.StreamConfiguration) async throws {
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                let result: Result<JetStream.StreamInfo, NATSError>
                do { result = .success(try await js.addOrUpdateStream(configuration)) } catch { result = .failure(error) }
                guard case .failure(let error) = result else { return }
                guard error.description.contains("no JetStream API answered"), ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(200))
            }
        }

        @Test func streamWithThreeReplicasAndErrorsNamingTheSetting() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let connection = try connect(cluster.urls)
            let js = try connection.jetStream()

            var config = JetStream.StreamConfiguration(name: "ROOMS", subjects: ["rooms.>"], replicas: 3,
                                                       maxAge: .seconds(3600), maxBytes: 64 << 20,
                                                       maxMessagesPerSubject: 10_000, duplicateWindow: .seconds(120))
            let created = try await js.addOrUpdateStream(config)
            #expect(created.name == "ROOMS")
            #expect(created.replicas.count == 2, "R3: a leader and two replicas")
            #expect(created.leader.map { name in cluster.servers.contains { $0.name == name } } == true)

            // Same again: unchanged; another limit: updated in place.
            _ = try await js.addOrUpdateStream(config)
            config.maxMessagesPerSubject = 500
            _ = try await js.addOrUpdateStream(config)
            let sequence = try await js.publish("rooms.a", [1])
            #expect(sequence == 1)
            let info = try await js.streamInfo("ROOMS")
            #expect(info.lastSequence == 1 && info.messages == 1)

            // Five replicas on three servers: the error names the setting.
            do {
                _ = try await js.addOrUpdateStream(.init(name: "FIVE", subjects: ["five.>"], replicas: 5))
                Issue.record("a stream with 5 replicas was created on 3 servers")
            } catch {
                guard case .streamNotCreated(let stream, let setting, _) = error else { throw error }
                #expect(stream == "FIVE")
                #expect(setting.contains("replicas = 5"), "\(error)")
            }
            // Overlapping subjects: named too.
            do {
                _ = try await js.addOrUpdateStream(.init(name: "OVERLAP", subjects: ["rooms.a"], replicas: 3))
                Issue.record("a stream overlapping ROOMS was created")
            } catch {
                guard case .streamNotCreated(_, let setting, _) = error else { throw error }
                #expect(setting.contains("subjects"), "\(error)")
            }
        }

        @Test func replicasOnAStandaloneServerIsNamed() async throws {
            let server = try NATSCluster(size: 1)
            defer { server.stop() }
            let js = try connect(server.urls).jetStream()
            do {
                _ = try await js.addOrUpdateStream(.init(name: "ROOMS", subjects: ["rooms.>"], replicas: 3))
                Issue.record("R3 created on one server")
            } catch {
                guard case .streamNotCreated(_, let setting, let detail) = error else { throw error }
                #expect(setting == "replicas = 3", "\(error)")
                #expect(detail.contains("10074"), "\(error)")
            }
        }

        @Test func checkedAppendsDuplicatesAndReads() async throws {
            let cluster = try NATSCluster(size: 1)
            defer { cluster.stop() }
            let js = try connect(cluster.urls).jetStream()
            _ = try await js.addOrUpdateStream(.init(name: "LOG", subjects: ["log.>"]))

            #expect(try await js.lastMessage(stream: "LOG", subject: "log.a") == nil)
            let first = try await js.publish("log.a", Array("v1".utf8), headers: ["Version": "1"], expectedLastSubjectSequence: 0)
            #expect(first == 1)
            await #expect(throws: NATSError.wrongLastSequence(current: 1)) {
                try await js.publish("log.a", Array("fork".utf8), expectedLastSubjectSequence: 0)
            }
            _ = try await js.publish("log.b", [9])  // another subject: does not move log.a's last sequence
            let second = try await js.publish("log.a", Array("v2".utf8), messageID: "a/2", expectedLastSubjectSequence: first)
            #expect(second == 3)
            // The same message id again: nothing stored, the first one's sequence reported.
            await #expect(throws: NATSError.duplicate(sequence: 3)) {
                try await js.publish("log.a", Array("v2 again".utf8), messageID: "a/2", expectedLastSubjectSequence: second)
            }
            await #expect(throws: NATSError.noResponders(subject: "nostream.x")) {
                try await js.publish("nostream.x", [])
            }

            let last = try #require(try await js.lastMessage(stream: "LOG", subject: "log.a"))
            #expect(last.sequence == 3 && last.data == Array("v2".utf8) && last.subject == "log.a")
            #expect(last.headers["Nats-Msg-Id"] == "a/2")
            let byNumber = try #require(try await js.message(stream: "LOG", sequence: 1))
            #expect(byNumber.data == Array("v1".utf8) && byNumber.headers["Version"] == "1")
            #expect(try await js.message(stream: "LOG", sequence: 99) == nil)
            await #expect(throws: NATSError.self) { try await js.lastMessage(stream: "NOPE", subject: "log.a") }
        }

        /// The fence: two writers on different servers extend the same version at the same
        /// moment, 200 times. With a shared `Nats-Msg-Id` per slot plus the expected last
        /// sequence, exactly one wins every round, even on nats-server 2.9.10.
        @Test func racingCheckedAppendsNeverBothWin() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let writerA = try connect([cluster.servers[0].url], name: "writer-a").jetStream()
            let writerB = try connect([cluster.servers[1].url], name: "writer-b").jetStream()
            _ = try await writerA.addOrUpdateStream(.init(name: "ROOMS", subjects: ["rooms.>"], replicas: 3))

            func runRaces(subject: String, rounds: Int, withMessageIDs: Bool) async throws -> (doubleWins: Int, noWins: Int) {
                var last: UInt64 = 0
                var doubleWins = 0, noWins = 0
                for round in 0..<rounds {
                    let id = withMessageIDs ? "\(subject)/epoch1/\(last)" : nil
                    let expected = last
                    let results = await race(
                        { writerA.publish(subject, Array("a\(round)".utf8), messageID: id, expectedLastSubjectSequence: expected, completion: $0) },
                        { writerB.publish(subject, Array("b\(round)".utf8), messageID: id, expectedLastSubjectSequence: expected, completion: $0) })
                    let wins = results.compactMap { try? $0.get() }
                    for case .failure(let error) in results {
                        switch error {
                        case .wrongLastSequence, .duplicate, .duplicateInProcess: break  // lost the slot
                        default: Issue.record("round \(round): \(error)")
                        }
                    }
                    if wins.count > 1 { doubleWins += 1 }
                    if wins.isEmpty { noWins += 1 }
                    let stored = try #require(try await writerA.lastMessage(stream: "ROOMS", subject: subject))
                    last = stored.sequence
                }
                return (doubleWins, noWins)
            }

            let fenced = try await runRaces(subject: "rooms.fenced", rounds: 200, withMessageIDs: true)
            #expect(fenced.doubleWins == 0)
            #expect(fenced.noWins == 0)
            let history = try await writerA.messages(stream: "ROOMS", subject: "rooms.fenced", from: 1)
            #expect(history.count == 200, "one stored message per round")

            // The server bug the Msg-Id covers (reported, not asserted: fixed in 2.9.21).
            let bare = try await runRaces(subject: "rooms.bare", rounds: 100, withMessageIDs: false)
            print("checked appends without Msg-Id: \(bare.doubleWins) double wins in 100 races; with Msg-Id: \(fenced.doubleWins) in 200")
        }

        @Test func republishCarriesSequenceHeaders() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let owner = try connect([cluster.servers[0].url], name: "owner")
            let other = try connect([cluster.servers[2].url], name: "other")
            let js = try owner.jetStream()
            _ = try await js.addOrUpdateStream(.init(
                name: "ROOMS", subjects: ["rooms.>"], replicas: 3,
                rePublish: .init(source: "rooms.>", destination: "frames.>")))

            let frames = Collector<NATSMessage>()
            let subscription = try other.subscribe("frames.>") { frames.append($0) }
            // Republished by whichever server leads the stream: every server must know the interest.
            var probes: [NATSConnection] = []
            for url in cluster.urls { probes.append(try connect([url], name: "probe")) }
            try await waitForInterest(of: other, at: probes)

            let a1 = try await js.publish("rooms.a", Array("a1".utf8))
            let b1 = try await js.publish("rooms.b", Array("b1".utf8))
            let a2 = try await js.publish("rooms.a", Array("a2".utf8), expectedLastSubjectSequence: a1)
            let received = try await frames.wait(for: 3)
            #expect(received.map(\.subject) == ["frames.a", "frames.b", "frames.a"])
            #expect(received.map(\.data) == [Array("a1".utf8), Array("b1".utf8), Array("a2".utf8)])
            #expect(received.map { $0.headers["Nats-Sequence"] } == [String(a1), String(b1), String(a2)])
            // The previous sequence of the same subject: 0 for the first, then a1.
            #expect(received.map { $0.headers["Nats-Last-Sequence"] } == ["0", "0", String(a1)])
            #expect(received[0].headers["Nats-Stream"] == "ROOMS")
            #expect(received[0].headers["Nats-Subject"] == "rooms.a")
            _ = subscription
        }

        @Test func catchUpReadsEveryMessageInOrder() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let connection = try connect([cluster.servers[1].url])
            let js = try connection.jetStream()
            try await Self.createStream(js, .init(name: "LOG", subjects: ["log.>"], replicas: 3))

            // 2,000 messages on log.r1 interleaved with 1,000 on log.r2, published in flight.
            let acks = Collector<Result<UInt64, NATSError>>()
            for index in 0..<3000 {
                let subject = index % 3 == 2 ? "log.r2" : "log.r1"
                js.publish(subject, Array("\(subject) \(index)".utf8)) { acks.append($0) }
            }
            let results = try await acks.wait(for: 3000, timeout: .seconds(60))
            #expect(results.allSatisfy { (try? $0.get()) != nil })

            let all = try await js.messages(stream: "LOG", subject: "log.r1", from: 1)
            let expected = (0..<3000).filter { $0 % 3 != 2 }.map { "log.r1 \($0)" }
            #expect(all.count == 2000)
            #expect(all.map { String(decoding: $0.data, as: UTF8.self) } == expected)
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
            #expect(all.allSatisfy { $0.subject == "log.r1" })

            // From the middle: the rest, in order.
            let middle = all[1000].sequence
            let rest = try await js.messages(stream: "LOG", subject: "log.r1", from: middle)
            #expect(rest.map(\.sequence) == all[1000...].map(\.sequence))
            // Past the end, and a subject with no messages: nothing, at once.
            #expect(try await js.messages(stream: "LOG", subject: "log.r1", from: all.last!.sequence + 1).isEmpty)
            #expect(try await js.messages(stream: "LOG", subject: "log.none", from: 1).isEmpty)
        }

        /// A catch-up consumer served by a replica behind the stream leader (a follower whose
        /// catch-up stalled) ends, or falls silent, before the log does: the read goes on to the
        /// subject's end as the leader knows it, from the leader.
        @Test(.serialized, arguments: [UInt64(10), 0])
        func aReadWhoseReplicaIsBehindTheLeaderReadsTheRestFromTheLeader(replicaEnd: UInt64) async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let js = try connect([cluster.servers[0].url]).jetStream()
            try await Self.createStream(js, .init(name: "LOG", subjects: ["log.>"], replicas: 3))
            // From nats-server 2.10 on a new stream answers once its leader is elected.
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                do {
                    _ = try await js.publish("log.r", Array("1".utf8))
                    break
                } catch {
                    guard case .noResponders = error, ContinuousClock.now < deadline else { throw error }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            for index in 2...20 {
                _ = try await js.publish(index % 4 == 0 ? "log.other" : "log.r", Array("\(index)".utf8))
            }
            let expected = (1...20).filter { $0 % 4 != 0 }.map(String.init)

            js.consumerReplicaEndForTests.withLock { $0 = replicaEnd }
            let read = try await js.messages(stream: "LOG", subject: "log.r", from: 1, idleTimeout: .seconds(2))
            #expect(read.map { String(decoding: $0.data, as: UTF8.self) } == expected, "every message, in order, none twice")
            #expect(js.readsFromLeader.load(ordering: .relaxed) == 1)

            // A replica that is not behind: the consumer alone.
            js.consumerReplicaEndForTests.withLock { $0 = nil }
            #expect(try await js.messages(stream: "LOG", subject: "log.r", from: 1).count == expected.count)
            #expect(js.readsFromLeader.load(ordering: .relaxed) == 1)
        }

        /// A consumer message lost on the way (the C client drops messages for a slow consumer):
        /// the gap in consumer sequences sends the read to the leader, which has the message.
        @Test func aReadWhoseConsumerSkipsAMessageReadsTheRestFromTheLeader() async throws {
            let server = try NATSCluster(size: 1)
            defer { server.stop() }
            let js = try connect(server.urls).jetStream()
            _ = try await js.addOrUpdateStream(.init(name: "LOG", subjects: ["log.>"], replicas: 1))
            for index in 1...20 {
                _ = try await js.publish(index % 4 == 0 ? "log.other" : "log.r", Array("\(index)".utf8))
            }
            let expected = (1...20).filter { $0 % 4 != 0 }.map(String.init)

            js.consumerDropsForTests.withLock { $0 = 5 }
            let read = try await js.messages(stream: "LOG", subject: "log.r", from: 1)
            #expect(read.map { String(decoding: $0.data, as: UTF8.self) } == expected, "every message, in order, none twice")
            #expect(js.readsFromLeader.load(ordering: .relaxed) == 1)
        }

        /// Creating a consumer needs the JetStream meta leader: while it is re-elected after its
        /// server died, a catch-up read goes on with message-get requests to the stream leader.
        @Test func catchUpWorksWhileTheMetaLeaderIsReElected() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let metaLeader = try #require(cluster.metaLeader(cluster.servers[0]))
            let js = try connect(cluster.servers.filter { $0.name != metaLeader }.map(\.url), name: "reader").jetStream()
            _ = try await js.addOrUpdateStream(.init(name: "ROOMS", subjects: ["rooms.>"], replicas: 3))
            // The stream must be led elsewhere, so that only the meta leader goes away.
            for _ in 0..<10 where try await js.streamInfo("ROOMS").leader == metaLeader {
                _ = try? await js.connection.request("$JS.API.STREAM.LEADER.STEPDOWN.ROOMS", [], timeout: .seconds(2))
                try await Task.sleep(for: .milliseconds(500))
            }
            try #require(try await js.streamInfo("ROOMS").leader != metaLeader)
            // A stream whose leader just changed can answer "no responders" for a moment (CI rehearsal).
            let settled = ContinuousClock.now + .seconds(10)
            while true {
                do {
                    _ = try await js.publish("rooms.r", Array("0".utf8))
                    break
                } catch {
                    guard case .noResponders = error, ContinuousClock.now < settled else { throw error }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            for index in 1..<20 { _ = try await js.publish("rooms.r", Array("\(index)".utf8)) }

            cluster.kill9(cluster.server(metaLeader))
            let start = ContinuousClock.now
            _ = try await js.publish("rooms.r", Array("20".utf8))
            let read = try await js.messages(stream: "ROOMS", subject: "rooms.r", from: 1)
            let took = ContinuousClock.now - start
            #expect(read.map { String(decoding: $0.data, as: UTF8.self) } == (0...20).map(String.init))
            #expect(took < .seconds(4), "read took \(took)")
        }

        /// kill -9 of the server leading the stream while a writer appends: appends resume after
        /// the election, and every acknowledged append is in the stream afterwards.
        @Test func appendsResumeAfterTheStreamLeaderIsKilled() async throws {
            let cluster = try NATSCluster(size: 3)
            defer { cluster.stop() }
            let admin = try connect(cluster.urls, name: "admin").jetStream()
            _ = try await admin.addOrUpdateStream(.init(name: "ROOMS", subjects: ["rooms.>"], replicas: 3))
            let leaderName = try #require(try await admin.streamInfo("ROOMS").leader)
            let leader = cluster.server(leaderName)
            // The writer connects to the other servers, so its own connection survives.
            let writer = try connect(cluster.servers.filter { $0.name != leaderName }.map(\.url), name: "writer").jetStream()

            var acknowledged: [UInt64: [UInt8]] = [:]
            var last: UInt64 = 0
            var killedAt: ContinuousClock.Instant?
            var resumedAfter: Duration?
            var failures = 0
            var failureKinds: [String: Int] = [:]
            let start = ContinuousClock.now
            while resumedAfter == nil, ContinuousClock.now - start < .seconds(40) {
                if killedAt == nil, acknowledged.count == 50 {
                    cluster.kill9(leader)
                    killedAt = .now
                }
                let data = Array("version \(last)".utf8)
                do {
                    let sequence = try await writer.publish("rooms.r", data, messageID: "r/\(last)",
                                                            expectedLastSubjectSequence: last, timeout: .seconds(1))
                    acknowledged[sequence] = data
                    last = sequence
                    if let killedAt, failures > 0 { resumedAfter = ContinuousClock.now - killedAt }
                } catch .duplicate(let sequence) {
                    // An earlier attempt of ours was stored after all (its ack was lost).
                    acknowledged[sequence] = data
                    last = sequence
                } catch {
                    failures += 1
                    failureKinds["\(error)".components(separatedBy: " (")[0], default: 0] += 1
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let resumed = try #require(resumedAfter, "appends did not resume")
            print("kill -9 of stream leader \(leaderName): appends resumed after \(resumed) (\(failures) failed attempts: \(failureKinds))")
            #expect(resumed < .seconds(30))

            // A few more after the election, then everything acknowledged must be there.
            for _ in 0..<10 {
                let data = Array("version \(last)".utf8)
                let sequence = try await writer.publish("rooms.r", data, expectedLastSubjectSequence: last)
                acknowledged[sequence] = data
                last = sequence
            }
            let stored = try await writer.messages(stream: "ROOMS", subject: "rooms.r", from: 1, idleTimeout: .seconds(20))
            let storedBySequence = Dictionary(uniqueKeysWithValues: stored.map { ($0.sequence, $0.data) })
            let lost = acknowledged.filter { storedBySequence[$0.key] != $0.value }
            #expect(lost.isEmpty, "acknowledged but not stored: \(lost.keys.sorted())")
            #expect(stored.count == acknowledged.count, "no unacknowledged forks")

            // The killed server comes back and catches up. Right after its restart it may still
            // answer stream info from its own stale copy: catching up takes a moment.
            try cluster.restart(leader)
            var lastSeen: UInt64 = 0
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                lastSeen = (try? await admin.streamInfo("ROOMS"))?.lastSequence ?? 0
                if lastSeen == last { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(lastSeen == last)
        }
    }
}
