import Logging
import Synchronization
import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
@testable import TetherServer
import TetherState
import TetherTesting

/// The parts of per-viewer values on a cluster that need no NATS (docs/CLUSTER.md, "Per-viewer
/// values"): the log message's layout, the owner's table of what each node holds, the owner's
/// `Room` (projections beside its steps, presence fed to its ViewModel) and the viewer a forwarded
/// action carries. The whole path runs in ClusterViewerTests (end to end).
@Suite("Per-viewer values on a cluster: log messages and the owner's table")
struct ClusterProjectionTests {
    @Test func aLogMessageCarriesChangedProjectionsAfterTheFrameAndAPlainOneIsTheFrameAlone() throws {
        let frame = Array(#"{"type":"patch","room":"vote","epoch":"e","from":3,"version":4,"ops":[]}"#.utf8)
        let plain = LogEntry(kind: .patch, epoch: "e", from: 3, version: 4, node: "n1", term: "t1", frame: frame)
        #expect(plain.data == frame, "a room without per-viewer values logs the frame byte for byte")
        #expect(plain.headers["Tether-Frame-Length"] == nil)

        let projections: JSON = ["n2": ["ana": ["mine": "pizza"], "bo": [:]]]
        let entry = LogEntry(kind: .patch, epoch: "e", from: 3, version: 4, node: "n1", term: "t1", frame: frame, projections: projections)
        #expect(entry.headers["Tether-Frame-Length"] == String(frame.count))
        #expect(Array(entry.data.prefix(frame.count)) == frame)
        let read = try #require(LogEntry(headers: entry.headers, data: entry.data))
        #expect(read.frame == frame && read.projections == projections && read.version == 4)
        #expect(read.isSameAppend(as: entry), "the entry's identity (owner term, slot) survives the log")
        var otherOwner = entry
        otherOwner.term = "t2"
        #expect(!read.isSameAppend(as: otherOwner), "another owner's entry for the same slot is not ours")

        // A length past the data, or projections that don't parse, make no entry.
        var headers = entry.headers
        headers["Tether-Frame-Length"] = String(entry.data.count + 1)
        #expect(LogEntry(headers: headers, data: entry.data) == nil)
        #expect(LogEntry(headers: entry.headers, data: frame + Array("{".utf8)) == nil)
    }

    /// The ViewModel's stored state rides last: a step's operations on it, or an epoch start's
    /// whole stored state, with or without projections before it.
    @Test func aLogMessageCarriesTheStoredStateLast() throws {
        let frame = Array(#"{"type":"patch","room":"vote","epoch":"e","from":3,"version":4,"ops":[]}"#.utf8)
        let stored: JSON = [["op": "add", "path": "/choices/ana", "value": "pizza"]]
        let projections: JSON = ["n2": ["ana": ["mine": "pizza"]]]
        for carried in [nil, projections] {
            let entry = LogEntry(kind: .patch, epoch: "e", from: 3, version: 4, node: "n1", term: "t1", frame: frame,
                                 projections: carried, stored: stored)
            #expect(entry.headers["Tether-Stored-Length"] == String(stored.encoded().count))
            #expect(Array(entry.data.prefix(frame.count)) == frame, "clients' frame first, byte for byte")
            let read = try #require(LogEntry(headers: entry.headers, data: entry.data))
            #expect(read.frame == frame && read.projections == carried && read.stored == stored)
        }
        let plain = LogEntry(kind: .patch, epoch: "e", from: 3, version: 4, node: "n1", term: "t1", frame: frame)
        #expect(plain.headers["Tether-Stored-Length"] == nil && LogEntry(headers: plain.headers, data: plain.data)?.stored == nil)
        var headers = LogEntry(kind: .patch, epoch: "e", from: 3, version: 4, node: "n1", term: "t1", frame: frame, stored: stored).headers
        headers["Tether-Stored-Length"] = String(frame.count + stored.encoded().count + 1)
        #expect(LogEntry(headers: headers, data: frame + stored.encoded()) == nil, "a length past the data makes no entry")
    }

    @Test func aClusterSnapshotKeepsTheStoredState() throws {
        let snapshot = ClusterSnapshot(epoch: "e", version: 100, sequence: 7, state: ["open": true], stored: ["choices": ["ana": "pizza"]])
        let read = try #require(ClusterSnapshot(snapshot.encoded))
        #expect(read.stored == ["choices": ["ana": "pizza"]] && read.state == ["open": true] && read.sequence == 7)
        let older = try #require(ClusterSnapshot(ClusterSnapshot(epoch: "e", version: 1, sequence: 1, state: [:]).encoded))
        #expect(older.stored == nil, "a snapshot without stored state (an older tetherd's) keeps none")
    }

    @Test func theOwnerSendsAProjectionOnlyWhenItDiffersFromWhatTheNodeHolds() {
        var projections = ClusterProjections()
        var current: [String: [String: JSON]] = ["ana": ["mine": "pizza"], "bo": [:], "cy": [:]]
        var computed: [String] = []
        let project = { (viewer: Viewer) -> [String: JSON] in
            computed.append(viewer.id)
            return current[viewer.id] ?? [:]
        }
        let ana = Viewer(id: "ana"), bo = Viewer(id: "bo"), cy = Viewer(id: "cy")

        // Viewers new to a node hold nothing: only a non-empty projection goes out.
        #expect(projections.change(node: "n1", set: [AnnouncedViewer(viewer: ana, holds: false), AnnouncedViewer(viewer: bo, holds: false)],
                                   removed: [], project) == ["n1": ["ana": ["mine": "pizza"]]])
        #expect(projections.update(project) == nil, "nothing changed since")

        // Announced as holding something (a node after a change of owner): sent whatever it is.
        // An announcement computes the viewers announced, nobody else.
        computed.removeAll()
        #expect(projections.change(node: "n2", set: [AnnouncedViewer(viewer: ana, holds: true), AnnouncedViewer(viewer: cy, holds: true)],
                                   removed: [], project) == ["n2": ["ana": ["mine": "pizza"], "cy": [:]]])
        #expect(computed.sorted() == ["ana", "cy"])
        computed.removeAll()
        #expect(projections.update(project) == nil)
        #expect(computed.sorted() == ["ana", "bo", "cy"], "after a turn, a viewer on two nodes is computed once")

        // A change reaches every node that has the viewer, and only those.
        current["bo"] = ["mine": "salad"]
        #expect(projections.update(project) == ["n1": ["bo": ["mine": "salad"]]])
        #expect(projections.change(node: "n1", set: [], removed: ["ana"], project) == nil)
        current["ana"] = [:]
        #expect(projections.update(project) == ["n2": ["ana": [:]]])

        // A known viewer announced again keeps what its node holds.
        #expect(projections.change(node: "n1", set: [AnnouncedViewer(viewer: bo, holds: true)], removed: [], project) == nil)
        #expect(projections.update(project) == nil)
    }

    @Test func aCrowdedNodesHeartbeatGoesInPartsThatMakeTheWholeListAgain() throws {
        let name = JSON.string(String(repeating: "x", count: 100))
        let viewers = (0..<3_000).map { AnnouncedViewer(viewer: Viewer(id: "viewer-\($0)", claims: ["team": "red", "name": name]), holds: $0 % 2 == 0) }
        func announcements(_ node: String) -> NodeAnnouncements<AnnouncedViewer> {
            NodeAnnouncements(node: node, listKey: "viewers", id: \.viewer.id, same: { $0.viewer == $1.viewer },
                              encode: ClusterViewers.encode, decode: ClusterViewers.decode)
        }
        var n2 = announcements("n2"), n1 = announcements("n1")
        let beat1 = n2.heartbeat(viewers), beat2 = n2.heartbeat(viewers)
        #expect(beat1.count > 1, "more than 256 KiB of viewers: several parts")
        #expect(beat1.allSatisfy { $0.encoded().count <= NodeAnnouncements<AnnouncedViewer>.maxPartBytes + 100 })
        // An incomplete beat gives nothing; the next beat starts over and completes.
        let now = ContinuousClock.now
        #expect(n1.receive(beat1[0].encoded(), now: now)?.change.isEmpty == true)
        var whole: [AnnouncedViewer] = []
        for (index, part) in beat2.enumerated() {
            let change = try #require(n1.receive(part.encoded(), now: now)?.change)
            #expect(change.isEmpty == (index < beat2.count - 1))
            whole += change.set
        }
        #expect(whole.count == viewers.count)
        #expect(whole.map(\.viewer) == viewers.map(\.viewer), "the whole list, in order")
        #expect(whole.map(\.holds) == viewers.map(\.holds))
    }

    @Test func aForwardedActionCarriesItsViewer() throws {
        let viewer = Viewer(id: "ana", claims: ["sub": "ana", "team": "red"])
        let request = ForwardedAction.request(name: "vote", args: ["option": "pizza"], viewer: viewer)
        let parsed = try #require(ForwardedAction.parseRequest(request))
        #expect(parsed.name == "vote" && parsed.args == ["option": "pizza"] && parsed.viewer == viewer)

        // From a node that sends no viewer: the action has none.
        let bare = try #require(ForwardedAction.parseRequest(Array(#"{"name":"close","args":null}"#.utf8)))
        #expect(bare.viewer == .unidentified && bare.args == nil)
    }

    /// What a cluster owner's `Room` hands its log, in order: steps (with the projections beside
    /// them) and what it releases after them.
    final class Captured: RoomLog {
        enum Entry {
            case step(PatchFrame, projections: JSON?)
            case released(RoomDelivery)
        }
        let restored: StoredRoom
        let entries = Mutex<[Entry]>([])
        init(restored: StoredRoom) { self.restored = restored }
        func restore() -> StoredRoom? { restored }
        func startEpoch(_ epoch: String, version: Int, state: RoomState, lastChange: Int) { Issue.record("the room continues its epoch") }
        func append(_ step: PatchFrame, stored: [PatchOperation], projections: JSON?, applied: ActionNumber?, lastChange: Int,
                    webhooks: [WebhookDelivery], provenance: StepProvenance, state: () -> RoomState) {
            entries.withLock { $0.append(.step(step, projections: projections)) }
        }
        func release(_ deliveries: [RoomDelivery]) { entries.withLock { $0 += deliveries.map(Entry.released) } }
        func close(epoch: String, version: Int, state: RoomState, lastChange: Int) {}
        func delete() {}
        func take() -> [Entry] { entries.withLock { taken in defer { taken.removeAll() }; return taken } }
    }

    /// A `Room` as a cluster's owner runs it: no sessions, its log captured, on a manual executor.
    static func ownersRoom(_ kind: ViewModelKind) -> (Room, Captured, ManualScheduler) {
        let scheduler = ManualScheduler()
        let runtime = ServerRuntime(clock: TestClock()) { _ in scheduler.makeRoomExecutor() }
        let environment = RoomEnvironment(configuration: TestServer.defaultConfiguration, runtime: runtime, store: nil, metrics: ServerMetrics(),
                                          logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let output = Captured(restored: StoredRoom(epoch: "e", version: 0, state: kind.instantiate(room: kind.name).state, patches: []))
        let room = Room(name: kind.name, kind: kind, environment: environment, log: output)
        room.start(after: nil)
        scheduler.runUntilIdle()
        return (room, output, scheduler)
    }

    @Test func theOwnersRoomLogsProjectionsOfAnnouncedViewersBesideItsSteps() throws {
        let (room, output, scheduler) = Self.ownersRoom(ViewModelKind("vote", scope: .shared, Vote.self))
        let ana = Viewer(id: "ana"), bo = Viewer(id: "bo")
        let target = { (viewer: Viewer) in ActionReplyTarget.remote(viewer: viewer) { _ in } }

        room.clusterViewersChanged(node: "n2", set: [AnnouncedViewer(viewer: ana, holds: false)], removed: [])
        scheduler.runUntilIdle()
        #expect(output.take().isEmpty, "ana has no value yet: nothing to send, no version step")

        // ana votes through another node: the owner's ViewModel knows who she is.
        room.perform("vote", args: ["option": "pizza"], replyTo: target(ana))
        scheduler.runUntilIdle()
        var deliveries = output.take()
        #expect(deliveries.count == 2, "\(deliveries)")
        guard case .step(let patch, let projections)? = deliveries.first else {
            Issue.record("expected a step with its projections: \(deliveries)")
            return
        }
        #expect(patch.version == 1)
        #expect(projections == ["n2": ["ana": ["mine": "pizza"]]])
        guard case .released(.reply(.applied(version: 1), .remote(let replyViewer, _)))? = deliveries.last else {
            Issue.record("expected the action's outcome last: \(deliveries)")
            return
        }
        #expect(replyViewer == ana)

        // bo, not announced anywhere yet, votes: his step carries nothing for him...
        room.perform("vote", args: ["option": "salad"], replyTo: target(bo))
        scheduler.runUntilIdle()
        deliveries = output.take()
        #expect(deliveries.contains { if case .step(_, nil) = $0 { true } else { false } }, "\(deliveries)")
        // ...until his node announces him: a step of its own with empty shared operations.
        room.clusterViewersChanged(node: "n3", set: [AnnouncedViewer(viewer: bo, holds: false)], removed: [])
        scheduler.runUntilIdle()
        deliveries = output.take()
        guard case .step(let empty, let boProjections?)? = deliveries.first else {
            Issue.record("expected a step for bo's value: \(deliveries)")
            return
        }
        #expect(empty.version == 3 && PatchFrame(room: "vote", epoch: "e", from: 2, version: 3, operations: []).frame == empty.frame)
        #expect(boProjections == ["n3": ["bo": ["mine": "salad"]]])
    }

    @Test func theOwnersRoomGivesItsViewModelTheClustersMembers() throws {
        let (room, output, scheduler) = Self.ownersRoom(ViewModelKind("roster", scope: .shared, Roster.self))
        var document: JSON = ["here": [], "editing": [:]]
        // Applies the version steps delivered since the last call; returns how many there were.
        func applySteps() throws -> Int {
            var count = 0
            for case .step(let patch, _) in output.take() {
                guard case .patch(_, _, _, _, let operations) = try ServerMessage.decode(patch.frame) else { continue }
                try document.apply(operations)
                count += 1
            }
            return count
        }
        let alice = PresenceMember(id: "s1", user: "s1", data: ["name": "alice"])
        let bob = PresenceMember(id: "s2", user: "s2", data: ["name": "bob", "editing": "t1"])
        room.clusterPresenceChanged(listed: [alice, bob], left: [])
        scheduler.runUntilIdle()
        #expect(try applySteps() == 1, "the whole list is one turn")
        #expect(document == ["here": ["alice", "bob"], "editing": ["t1": "bob"]])

        room.clusterPresenceChanged(listed: [], left: ["s2"])
        scheduler.runUntilIdle()
        #expect(try applySteps() == 1)
        #expect(document == ["here": ["alice"], "editing": [:]], "bob's item is released when he leaves")
    }
}
