import Testing
import TetherBinding
import TetherDemos
import TetherJSON
import TetherProtocol
@testable import TetherServer
import TetherState
import TetherTesting

/// Per-viewer values through a real hub and rooms (in process): who a viewer is (token or
/// anonymous connection), what each one's document holds, gapless streams, resume.
@Suite("Per-viewer values")
struct ViewerTests {
    static let authority = TokenAuthority(secret: Array("s3cret".utf8))

    static func server(auth: Bool, sendQueueBytes: Int? = nil) -> TestServer {
        var configuration = TestServer.defaultConfiguration
        if auth { configuration.auth = authority }
        if let sendQueueBytes { configuration.sendQueueBytes = sendQueueBytes }
        return TestServer(configuration: configuration, kinds: Demos.kinds + [ViewModelKind("teams", scope: .shared, Teams.self)])
    }

    /// A client past its hello that joined `room` (with a token for `subject`, if given).
    static func joined(_ server: TestServer, _ room: String = "vote", as subject: String? = nil) async -> TestClient {
        let client = server.connect()
        _ = client.receive()
        var token: String?
        if let subject { token = await authority.mint(AccessClaims(subject: subject, expires: server.clock.secondsSince1970 + 600, rooms: ["*"])) }
        client.send(.join(room: room, id: 1, token: token))
        #expect(client.receiveAll().map(\.type) == ["snapshot", "ack"])
        return client
    }

    @Test func eachTokenSubjectSeesOnlyTheirOwnChoice() async throws {
        let server = Self.server(auth: true)
        let ana = await Self.joined(server, as: "ana"), anaAgain = await Self.joined(server, as: "ana")
        let bo = await Self.joined(server, as: "bo"), cy = await Self.joined(server, as: "cy")
        ana.send(.action(room: "vote", name: "vote", args: ["option": "pizza"], id: 2))
        bo.send(.action(room: "vote", name: "vote", args: ["option": "salad"], id: 3))
        for client in [ana, anaAgain, bo, cy] { client.discardReceived() }

        #expect(ana.state(of: "vote")?["mine"] == "pizza")
        #expect(anaAgain.state(of: "vote")?["mine"] == "pizza", "every connection of a viewer sees their value")
        #expect(bo.state(of: "vote")?["mine"] == "salad")
        #expect(cy.state(of: "vote")?["mine"] == nil)
        for client in [ana, anaAgain, bo, cy] {
            #expect(client.state(of: "vote")?["totals"] == ["pizza": 1, "noodles": 0, "salad": 1])
            #expect(client.version(of: "vote") == 2, "one version counter for everyone")
            #expect(client.gaps.isEmpty)
        }
        // A late joiner's snapshot holds their own value.
        let anaLate = await Self.joined(server, as: "ana")
        #expect(anaLate.state(of: "vote")?["mine"] == "pizza")
        // After closing, everyone sees the ballots.
        cy.send(.action(room: "vote", name: "close", id: 4))
        cy.discardReceived()
        #expect(cy.state(of: "vote")?["ballots"] == ["ana": "pizza", "bo": "salad"])
    }

    @Test func withoutTokensEachConnectionIsItsOwnViewer() async {
        let server = Self.server(auth: false)
        let first = await Self.joined(server), second = await Self.joined(server)
        first.send(.action(room: "vote", name: "vote", args: ["option": "noodles"], id: 2))
        #expect(first.receiveAll().map(\.type) == ["patch", "ack"])
        #expect(second.receiveAll().map(\.type) == ["patch"])
        #expect(first.state(of: "vote")?["mine"] == "noodles")
        #expect(second.state(of: "vote")?["mine"] == nil)
        #expect(second.state(of: "vote")?["totals"]?["noodles"] == 1)
        #expect(first.gaps.isEmpty && second.gaps.isEmpty)
    }

    @Test func aResumeInARoomWithPerViewerValuesGetsASnapshot() async throws {
        let server = Self.server(auth: true)
        let ana = await Self.joined(server, as: "ana")
        ana.send(.action(room: "vote", name: "vote", args: ["option": "pizza"], id: 2))
        ana.discardReceived()
        let epoch = try #require(ana.mirrors["vote"]?.epoch)
        let back = server.connect()
        _ = back.receive()
        let token = await Self.authority.mint(AccessClaims(subject: "ana", expires: server.clock.secondsSince1970 + 600, rooms: ["vote"]))
        back.send(.join(room: "vote", id: 5, since: ResumePoint(epoch: epoch, version: 1), token: token))
        #expect(back.receiveAll().map(\.type) == ["snapshot", "ack"])
        #expect(back.state(of: "vote")?["mine"] == "pizza")
    }

    @Test func aTurnThatChangesOnlyOneViewersValueStepsTheVersionForEveryone() async throws {
        let server = Self.server(auth: true)
        let a = await Self.joined(server, "teams", as: "a"), b = await Self.joined(server, "teams", as: "b")
        a.send(.action(room: "teams", name: "promoteQuietly", args: ["team": "a"], id: 2))
        let toA = a.receiveAll(), toB = b.receiveAll()
        #expect(toA.first == .patch(room: "teams", epoch: a.mirrors["teams"]!.epoch, from: 0, version: 1,
                                    operations: [.add(path: "/level", value: 1)]))
        #expect(toB == [.patch(room: "teams", epoch: b.mirrors["teams"]!.epoch, from: 0, version: 1, operations: [])],
                "an empty step keeps b's stream gapless")
        #expect(a.state(of: "teams") == ["promotions": 0, "level": 1] && b.state(of: "teams") == ["promotions": 0])
        #expect(a.gaps.isEmpty && b.gaps.isEmpty)
    }

    @Test func aSlowViewerIsResyncedWithTheirOwnSnapshot() async throws {
        let server = Self.server(auth: true, sendQueueBytes: 4_096)
        let slow = await Self.joined(server, "teams", as: "a"), writer = await Self.joined(server, "teams", as: "b")
        slow.connection.isChoked = true
        for id in 1...40 { writer.send(.action(room: "teams", name: "promote", args: ["team": "a"], id: id)) }
        #expect(slow.receiveAll().isEmpty, "a choked connection takes nothing")
        slow.connection.isChoked = false
        server.run()
        #expect(slow.receiveAll().contains { $0.type == "snapshot" }, "the overflow was replaced by a snapshot")
        #expect(slow.state(of: "teams") == ["promotions": 40, "level": 40], "their own value is in the snapshot")
        writer.discardReceived()
        #expect(writer.state(of: "teams") == ["promotions": 40])
        #expect(slow.gaps.isEmpty && writer.gaps.isEmpty)
    }

    // MARK: One frame per distinct view

    /// Viewers of one team see the same per-viewer value, so their frames are the same.
    final class Teams: ViewModel {
        let promotions: Observable<Int>
        var levels: [String: Int] = [:]

        init(context: ViewModelContext) {
            promotions = context.property("promotions", 0)
            // A viewer's team is their `team` claim, else their id.
            context.perViewer("level") { [unowned self] viewer in self.levels[viewer.claims["team"]?.stringValue ?? viewer.id] }
        }

        struct Team: Decodable { var team: String }
        static let actions = ActionTable<Teams>()
            .on("promote", Team.self) { model, args in
                model.levels[args.team, default: 0] += 1
                model.promotions.value += 1
            }
            .on("promoteQuietly", Team.self) { model, args in model.levels[args.team, default: 0] += 1 }
    }

    static func subscriber(_ id: String, team: String) -> SessionHandle {
        let session = Session(id: id, connection: TestConnection(), sendQueue: SendQueue(limitBytes: 1 << 20, maxMergedBytes: 1 << 16),
                              actions: TokenBucket(rate: 10, capacity: 10, now: .now))
        return SessionHandle(session: session, viewer: Viewer(id: id, claims: ["team": .string(team)]))
    }

    @Test func subscribersWithTheSameProjectionChangeShareOneFrame() async throws {
        let host = ViewModelKind("teams", scope: .shared, Teams.self).instantiate(room: "teams")
        let a1 = Self.subscriber("a1", team: "a"), a2 = Self.subscriber("a2", team: "a"), b1 = Self.subscriber("b1", team: "b")
        var views = ViewerViews()
        for subscriber in [a1, a2, b1] { views.add(subscriber) { host.projection(for: $0) } }

        try host.perform("promote", args: ["team": "a"])
        let operations = try host.finishTurn(maxEncodedSize: 1 << 20)
        let changes = views.update { host.projection(for: $0) }
        #expect(changes.count == 2, "computed once per viewer: a1 and a2 each changed")
        let shared = PatchFrame(room: "teams", epoch: "e", from: 0, version: 1, operations: operations)
        let deliveries = views.deliveries(of: shared, changes: changes, to: [a1, a2, b1], compressAbove: nil)

        var frames: [(PatchFrame, Set<String>)] = []
        for case .patch(let frame, let sessions) in deliveries { frames.append((frame, Set(sessions.map(\.viewer.id)))) }
        #expect(frames.count == 2, "one shared frame and one for team a, encoded once")
        let plain = try #require(frames.first { $0.1 == ["b1"] })
        #expect(plain.0 === shared, "b1 gets the shared frame itself")
        let teamA = try #require(frames.first { $0.1 == ["a1", "a2"] })
        let message = try ServerMessage.decode(teamA.0.frame)
        #expect(message == .patch(room: "teams", epoch: "e", from: 0, version: 1,
                                  operations: [.replace(path: "/promotions", value: 1), .add(path: "/level", value: 1)]))
        #expect(views.projection(of: a2) == ["level": 1] && views.projection(of: b1) == [:])

        // A turn that changes only a viewer's value still steps the version, with the shared
        // frame empty for everyone else.
        views.remove(a2)
        host.model(as: Teams.self)!.levels["b"] = 7
        let onlyB = views.update { host.projection(for: $0) }
        #expect(onlyB == [b1.viewer: [.add(path: "/level", value: 7)]])
    }
}
