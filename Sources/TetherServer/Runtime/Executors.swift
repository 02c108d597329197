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

/// A work queue on a private dispatch queue: the room service's in production.
public struct DispatchWorkQueue: WorkQueue {
    let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }
}

/// What the server core runs on: its clock and where rooms run. Tests pass manual ones.
public struct ServerRuntime: Sendable {
    public var clock: any ServerClock
    public var makeRoomExecutor: @Sendable (_ room: String) -> any RoomExecutor

    public init(clock: any ServerClock, makeRoomExecutor: @escaping @Sendable (_ room: String) -> any RoomExecutor) {
        self.clock = clock
        self.makeRoomExecutor = makeRoomExecutor
    }
}
