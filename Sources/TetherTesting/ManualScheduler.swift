import DequeModule
import Synchronization
import TetherServer

/// Runs a test server's hub queue and room executors on the test's own thread, only when asked
/// (`runUntilIdle`), in a fixed order: every room job queued so far, then one batch of hub work,
/// again and again. Deterministic, and close to production, where rooms run on their own
/// queues and the hub drains its inbox in batches.
public final class ManualScheduler: Sendable {
    private struct State {
        var roomJobs: Deque<(executor: ObjectIdentifier, work: @Sendable () -> Void)> = []
        var hubJobs: [@Sendable () -> Void] = []
        var running: ObjectIdentifier?
    }

    private let state = Mutex(State())
    /// Called after each batch of hub work (the hub's `didRunQueuedWork`).
    let afterHubBatch = Mutex<(@Sendable () -> Void)?>(nil)

    /// Most jobs one `runUntilIdle` may run before it stops the test: work that keeps making
    /// work (a livelock) then fails loudly instead of hanging the test run. Nil: no limit.
    public let jobLimit: Int?

    public init(jobLimit: Int? = nil) {
        self.jobLimit = jobLimit
    }

    fileprivate func enqueueRoomJob(_ executor: ObjectIdentifier, _ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.roomJobs.append((executor, work)) }
    }

    fileprivate func enqueueHubJob(_ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.hubJobs.append(work) }
    }

    fileprivate func isRunning(_ executor: ObjectIdentifier) -> Bool {
        state.withLock { $0.running == executor }
    }

    public var hasWork: Bool { state.withLock { !$0.roomJobs.isEmpty || !$0.hubJobs.isEmpty } }

    /// Runs queued work, and the work it queues, until nothing is left.
    public func runUntilIdle() {
        var jobs = 0
        while hasWork {
            let roomCount = state.withLock { $0.roomJobs.count }
            jobs += roomCount
            if let jobLimit, jobs > jobLimit { fatalError("ManualScheduler: \(jobs) jobs without getting idle (a livelock?)") }
            for _ in 0..<roomCount {
                guard let job = state.withLock({ $0.roomJobs.popFirst() }) else { break }
                state.withLock { $0.running = job.executor }
                job.work()
                state.withLock { $0.running = nil }
            }
            let batch = state.withLock { state in
                defer { state.hubJobs.removeAll() }
                return state.hubJobs
            }
            guard !batch.isEmpty else { continue }
            for work in batch { work() }
            afterHubBatch.withLock { $0 }?()
        }
    }

    /// The hub's queue.
    public func makeHubQueue() -> any WorkQueue { HubQueue(scheduler: self) }

    /// A room executor; every room of a test server gets its own.
    public func makeRoomExecutor() -> any RoomExecutor { ManualRoomExecutor(scheduler: self) }

    private struct HubQueue: WorkQueue {
        let scheduler: ManualScheduler
        func execute(_ work: @escaping @Sendable () -> Void) { scheduler.enqueueHubJob(work) }
    }
}

/// A room's executor on a `ManualScheduler`: isolated while the scheduler runs one of its jobs.
final class ManualRoomExecutor: RoomExecutor {
    let scheduler: ManualScheduler

    init(scheduler: ManualScheduler) { self.scheduler = scheduler }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        scheduler.enqueueRoomJob(ObjectIdentifier(self)) { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func execute(_ work: @escaping @Sendable () -> Void) {
        scheduler.enqueueRoomJob(ObjectIdentifier(self), work)
    }

    func isIsolatingCurrentContext() -> Bool? { scheduler.isRunning(ObjectIdentifier(self)) }

    func checkIsolated() {
        precondition(scheduler.isRunning(ObjectIdentifier(self)), "not on this room's executor")
    }
}
