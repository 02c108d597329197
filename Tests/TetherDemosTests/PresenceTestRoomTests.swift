import Testing
import TetherBinding
import TetherJSON
import TetherState
import TetherTesting

/// A ViewModel that reacts to presence, tested with TestRoom: members arrive, change and leave,
/// and each reaction is asserted operation by operation.
@Suite("TestRoom with presence")
struct PresenceTestRoomTests {
    /// Locks an item while a member says it edits it (`data.editing`); the lock goes with the member.
    final class Locks: ViewModel {
        let locks: ObservableMap<String, String>
        private let bag = CancellableBag()

        init(context: ViewModelContext) {
            locks = context.map("locks", [String: String]())
            context.presence.members.observeChanges { [unowned self] change in
                switch change {
                case .set(let id, let member, _):
                    for (item, holder) in locks.dictionary where holder == id && member.data["editing"]?.stringValue != item {
                        locks.removeValue(forKey: item)
                    }
                    if let item = member.data["editing"]?.stringValue, locks[item] == nil { locks[item] = id }
                case .remove(let id, _):
                    for (item, holder) in locks.dictionary where holder == id { locks.removeValue(forKey: item) }
                }
            }.store(in: bag)
        }

        static let actions = ActionTable<Locks>()
    }

    @Test func aLeavingMemberReleasesItsLock() {
        let room = TestRoom(Locks.self)
        room.presence(PresenceMember(id: "s1", user: "kim", data: ["name": "kim"]))
        room.presence(PresenceMember(id: "s1", user: "kim", data: ["name": "kim", "editing": "t3"]),
                      produces: [.add(path: "/locks/t3", value: "s1")])
        room.presence(PresenceMember(id: "s2", user: "lee", data: ["editing": "t3"]))  // taken: nothing changes
        room.leave(member: "s1", produces: [.remove(path: "/locks/t3")], state: ["locks": [:]])
        #expect(room.host.context.presence.members.count == 1)
    }

    @Test func anUnassertedReactionFailsTheTest() {
        let room = TestRoom(Locks.self)
        withKnownIssue {
            room.presence(PresenceMember(id: "s1", user: "kim", data: ["editing": "t1"]))
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains(#"Produced, not asserted: [{"op":"add","path":"/locks/t1","value":"s1"}]"#) }
        }
    }
}
