import Testing
import TetherJSON
@testable import TetherServer
import TetherState

/// The parts of per-viewer values on a cluster that need no NATS (docs/CLUSTER.md, "Per-viewer
/// values"): the log message's layout, the owner's table of what each node holds, and the
/// viewer a forwarded action carries. The whole path runs in ClusterViewerTests (end to end).
@Suite("Per-viewer values on a cluster: log messages and the owner's table")
struct ClusterProjectionTests {
    @Test func aLogMessageCarriesChangedProjectionsAfterTheFrameAndAPlainOneIsTheFrameAlone() throws {
        let frame = Array(#"{"type":"patch","room":"vote","epoch":"e","from":3,"version":4,"ops":[]}"#.utf8)
        let plain = LogEntry(kind: .patch, epoch: "e", from: 3, version: 4, node: "n1", frame: frame)
        #expect(plain.data == frame, "a room without per-viewer values logs the frame byte for byte")
        #expect(plain.headers["Tether-Frame-Length"] == nil)

        let projections: JSON = ["n2": ["ana": ["mine": "pizza"], "bo": [:]]]
        let entry = LogEntry(kind: .patch, epoch: "e", from: 3, version: 4, node: "n1", frame: frame, projections: projections)
        #expect(entry.headers["Tether-Frame-Length"] == String(frame.count))
        #expect(Array(entry.data.prefix(frame.count)) == frame)
        let read = try #require(LogEntry(headers: entry.headers, data: entry.data))
        #expect(read.frame == frame && read.projections == projections && read.version == 4)

        // A length past the data, or projections that don't parse, make no entry.
        var headers = entry.headers
        headers["Tether-Frame-Length"] = String(entry.data.count + 1)
        #expect(LogEntry(headers: headers, data: entry.data) == nil)
        #expect(LogEntry(headers: entry.headers, data: frame + Array("{".utf8)) == nil)
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
        projections.change(node: "n1", set: [AnnouncedViewer(viewer: ana, holds: false), AnnouncedViewer(viewer: bo, holds: false)], removed: [])
        #expect(projections.update(project) == ["n1": ["ana": ["mine": "pizza"]]])
        #expect(projections.update(project) == nil, "nothing changed since")

        // Announced as holding something (a node after a change of owner): sent whatever it is.
        projections.change(node: "n2", set: [AnnouncedViewer(viewer: ana, holds: true), AnnouncedViewer(viewer: cy, holds: true)], removed: [])
        computed.removeAll()
        #expect(projections.update(project) == ["n2": ["ana": ["mine": "pizza"], "cy": [:]]])
        #expect(computed.filter { $0 == "ana" }.count == 1, "a viewer on two nodes is computed once per turn")

        // A change reaches every node that has the viewer, and only those.
        current["bo"] = ["mine": "salad"]
        #expect(projections.update(project) == ["n1": ["bo": ["mine": "salad"]]])
        projections.change(node: "n1", set: [], removed: ["ana"])
        current["ana"] = [:]
        #expect(projections.update(project) == ["n2": ["ana": [:]]])

        // A known viewer announced again keeps what its node holds.
        projections.change(node: "n1", set: [AnnouncedViewer(viewer: bo, holds: true)], removed: [])
        #expect(projections.update(project) == nil)
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
}
