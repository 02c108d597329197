import TetherJSON
import TetherProtocol
import TetherState

/// A room as the hub sees it: where the joins, leaves and actions for one room name go. Every
/// method hands its work to the room's own executor and returns at once. A local `Room` is one;
/// in a cluster, a `ClusteredRoom` fans out on this node and forwards actions to the room's
/// owner.
protocol RoomEndpoint: AnyObject, Sendable {
    var name: String { get }
    var kind: ViewModelKind { get }
    /// The room's epoch and version as last produced, readable from any thread (the system room).
    var published: RoomVersionCell { get }
    /// Subscribes: first a snapshot, or the patches after `since`; with `presence` (a member or a
    /// spectator), a presence snapshot follows; with an `id`, an ack comes last.
    func join(_ session: SessionHandle, since: ResumePoint?, id: Int?, presence: PresenceJoin?)
    /// Replaces the session's presence data; with an `id`, an ack or error follows.
    func updatePresence(_ session: SessionHandle, data: JSON, id: Int?)
    func leave(_ session: SessionHandle)
    /// After the session's queue overflowed: a fresh snapshot restarts its stream.
    func resync(_ session: SessionHandle)
    /// Runs an action; with a `number`, once: a repeat gets the first outcome (`ActionOutcomes`).
    func perform(_ action: String, args: JSON?, id: Int, number: ActionNumber?, from session: SessionHandle)
    /// Leaves memory (timers stop, state is kept where it is kept).
    func stop()
    /// Blocks until `stop()` has run: a new endpoint of the same name waits for its predecessor,
    /// so it sees every version the predecessor committed. Called on the successor's executor.
    func waitUntilStopped()
    /// `stop()`, awaited (shutdown).
    func stopAndWait() async
}

/// Makes the endpoints of new rooms. The local factory makes `Room`s; a cluster's makes
/// `ClusteredRoom`s for shared kinds. Called on the hub's queue.
protocol RoomFactory: Sendable {
    func makeRoom(named name: String, kind: ViewModelKind, after predecessor: (any RoomEndpoint)?,
                  output: any RoomOutput) -> any RoomEndpoint
}

/// Rooms in this process: each a `Room` on its own executor.
struct LocalRoomFactory: RoomFactory {
    let environment: RoomEnvironment

    func makeRoom(named name: String, kind: ViewModelKind, after predecessor: (any RoomEndpoint)?,
                  output: any RoomOutput) -> any RoomEndpoint {
        // The server's own rooms describe the running daemon: nothing of theirs is stored.
        let stored = kind.scope == .shared && !SystemRoom.isSystemKind(kind.name)
        let log = LocalRoomLog(room: name, kind: kind.name, store: stored ? environment.store : nil, output: output,
                               webhooks: stored ? environment.webhooks : nil, retention: kind.historyRetention)
        let room = Room(name: name, kind: kind, environment: environment, log: log)
        room.start(after: predecessor)
        return room
    }
}
