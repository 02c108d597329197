import Dispatch

/// Runs closures later, one at a time, in the order given. In this module "execute" always
/// means exactly that: the hub's thread and every room's executor are work queues.
public protocol WorkQueue: Sendable {
    func execute(_ work: @escaping @Sendable () -> Void)
}

/// Where a room runs: a Swift serial executor (the room is an actor isolated to it) that also
/// runs plain closures. Each room gets its own, so rooms never block each other or the sockets.
public protocol RoomExecutor: SerialExecutor, WorkQueue {}

/// A room executor on a private dispatch queue: the production one.
public final class DispatchRoomExecutor: RoomExecutor {
    let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    public func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}

/// What the server core runs on: its clock, the queue that owns every connection (the
/// transport's service thread in production), and where rooms run. Tests pass manual ones.
public struct ServerRuntime: Sendable {
    public var clock: any ServerClock
    public var hubQueue: any WorkQueue
    public var makeRoomExecutor: @Sendable (_ room: String) -> any RoomExecutor

    public init(clock: any ServerClock, hubQueue: any WorkQueue,
                makeRoomExecutor: @escaping @Sendable (_ room: String) -> any RoomExecutor) {
        self.clock = clock
        self.hubQueue = hubQueue
        self.makeRoomExecutor = makeRoomExecutor
    }
}
