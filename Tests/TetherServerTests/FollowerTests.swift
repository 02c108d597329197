import Testing
import TetherJSON
@testable import TetherServer
import TetherTesting
import TetherTestSupport

/// What every room shape keeps for its subscribers (Rooms/RoomFollowers.swift).
@Suite("Followers: subscriber list and snapshot cache")
struct FollowerTests {
    static func handle(_ id: Int) -> SessionHandle {
        let session = Session(id: "s\(id)", connection: TestConnection(), sendQueue: SendQueue(limitBytes: 1 << 20, maxMergedBytes: 1 << 16),
                              actions: TokenBucket(rate: 10, capacity: 10, now: .now))
        return SessionHandle(session: session)
    }

    /// Random joins and leaves (repeats included): the list always holds exactly the members of
    /// a plain set, once each.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func theListHoldsExactlyTheSubscribers(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let handles = (0..<40).map(Self.handle)
        var list = SubscriberList()
        var model = Set<SessionHandle>()
        for _ in 0..<2_000 {
            let handle = handles[Int(rng.next() % UInt64(handles.count))]
            if rng.next() % 3 == 0 {
                #expect(list.remove(handle) == (model.remove(handle) != nil))
            } else {
                #expect(list.add(handle) == model.insert(handle).inserted)
            }
            #expect(list.count == model.count)
            #expect(Set(list.all) == model && list.all.count == model.count)
            #expect(handles.allSatisfy { list.contains($0) == model.contains($0) })
        }
    }

    /// One encoding per version and view; a new version, or more views than the bound, starts over.
    @Test func snapshotsAreEncodedOncePerVersionAndView() {
        var cache = SnapshotCache()
        var encoded = 0
        func message(_ version: Int, _ view: String) -> OutboundMessage {
            cache.message(room: "r", version: version, projection: view.isEmpty ? [:] : ["me": .string(view)], compressAbove: 16) {
                encoded += 1
                return Array("{\"type\":\"snapshot\",\"version\":\(version),\"view\":\"\(view)\",\"pad\":\"\(String(repeating: "x", count: 100))\"}".utf8)
            }
        }
        _ = message(1, ""); _ = message(1, ""); _ = message(1, "a"); _ = message(1, "a")
        #expect(encoded == 2)
        guard case .snapshot(_, 1, let frame, let compressed?) = message(1, "") else { Issue.record("no compressed snapshot"); return }
        #expect(compressed.count < frame.count, "frames past the threshold are compressed once, beside the plain frame")
        _ = message(2, "")
        #expect(encoded == 3, "a new version is encoded anew")
        for view in 0..<SnapshotCache.maxViews { _ = message(2, "v\(view)") }
        _ = message(2, "")
        #expect(encoded == 3 + SnapshotCache.maxViews + 1, "past the bound the cache starts over")
    }
}
