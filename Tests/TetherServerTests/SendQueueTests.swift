import Testing
@testable import TetherServer
import TetherProtocol
import TetherJSON

@Suite("Send queue and history")
struct SendQueueTests {
    let now = ContinuousClock.now

    func patch(_ room: String = "r", from: Int, _ value: Int = 0, epoch: String = "e") -> PatchFrame {
        PatchFrame(room: room, epoch: epoch, from: from, version: from + 1, operations: [.replace(path: "/n", value: .int(value))])
    }

    @Test func patchFrameHoldsItsEncodedOperations() throws {
        let frame = patch(from: 4, 9)
        #expect(try ServerMessage.decode(frame.frame) == .patch(room: "r", epoch: "e", from: 4, version: 5, operations: [.replace(path: "/n", value: 9)]))
        #expect(String(decoding: frame.encodedOperations, as: UTF8.self) == #"{"op":"replace","path":"/n","value":9}"#)
    }

    @Test func overflowDropsTheRoomsPatchesAndAwaitsASnapshot() {
        let one = patch(from: 0)
        var queue = SendQueue(limitBytes: one.byteCount * 2 + 10, maxMergedBytes: 1 << 16)
        #expect(queue.enqueue(.control([1, 2, 3]), now: now) == .queued)
        #expect(queue.enqueue(.patch(patch("other", from: 0)), now: now) == .queued)
        #expect(queue.enqueue(.patch(one), now: now) == .queued)
        #expect(queue.enqueue(.patch(patch(from: 1)), now: now) == .overflowed(room: "r"))
        #expect(queue.count == 2, "the control frame and the other room's patch stay")
        #expect(queue.enqueue(.patch(patch(from: 2)), now: now) == .dropped, "patches wait for the snapshot")
        #expect(queue.enqueue(.snapshot(room: "r", version: 5, frame: [9]), now: now) == .queued)
        #expect(queue.enqueue(.patch(patch(from: 5)), now: now) == .queued, "the stream resumes after the snapshot")
        #expect(queue.awaitingSnapshot.isEmpty)
    }

    @Test func snapshotSupersedesTheRoomsQueuedMessages() {
        var queue = SendQueue(limitBytes: 1 << 20, maxMergedBytes: 1 << 16)
        _ = queue.enqueue(.patch(patch(from: 0)), now: now)
        _ = queue.enqueue(.patch(patch("b", from: 0)), now: now)
        _ = queue.enqueue(.snapshot(room: "r", version: 1, frame: [1]), now: now)
        #expect(queue.count == 2)
        queue.forget(room: "b")
        #expect(queue.count == 1)
        #expect(queue.queuedBytes == 1)
    }

    @Test func historyServesContiguousRunsAndTrims() {
        var history = PatchHistory(maxPatches: 3, maxBytes: 1 << 20)
        for from in 0..<5 { history.append(patch(from: from)) }
        #expect(history.patches.count == 3)
        #expect(history.patches(after: 5, newest: 5)?.isEmpty == true)
        #expect(history.patches(after: 2, newest: 5)?.map(\.from) == [2, 3, 4])
        #expect(history.patches(after: 3, newest: 5)?.map(\.from) == [3, 4])
        #expect(history.patches(after: 1, newest: 5) == nil, "trimmed")
        #expect(history.patches(after: 6, newest: 5) == nil, "from the future")
        // Patches spanning several versions (a cluster's merged appends): only exact starts resume.
        var merged = PatchHistory(maxPatches: 10, maxBytes: 1 << 20)
        merged.append(PatchFrame(room: "r", epoch: "e", from: 0, version: 3, operations: []))
        merged.append(PatchFrame(room: "r", epoch: "e", from: 3, version: 4, operations: []))
        merged.append(PatchFrame(room: "r", epoch: "e", from: 4, version: 9, operations: []))
        #expect(merged.patches(after: 3, newest: 9)?.map(\.from) == [3, 4])
        #expect(merged.patches(after: 0, newest: 9)?.map(\.from) == [0, 3, 4])
        #expect(merged.patches(after: 5, newest: 9) == nil, "inside a merged patch: a snapshot instead")
        #expect(merged.patches(after: 8, newest: 9) == nil)
        var bytes = PatchHistory(maxPatches: 100, maxBytes: patch(from: 0).byteCount * 2)
        for from in 0..<5 { bytes.append(patch(from: from)) }
        #expect(bytes.patches.count == 2)
    }
}
