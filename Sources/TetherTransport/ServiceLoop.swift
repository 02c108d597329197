import CLibWebSockets
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// THREADING RULE (applies to the whole module)
//
// Each WebSocketServer / WebSocketClient owns exactly one lws context, serviced by exactly one
// dedicated thread (the "loop thread") that owns every socket of that context. Every delegate
// callback runs on that thread, and every lws function is called only from it, with a single
// exception: `lws_cancel_service`, which other threads use to wake the loop.
//
// Other threads talk to the loop only through `execute(_:)` (and start/shutdown): the closure is
// appended to a locked inbox, and `lws_cancel_service` is called only when the inbox goes from
// empty to non-empty, so a burst of posts costs one wake-up. The loop drains the inbox in
// LWS_CALLBACK_EVENT_WAIT_CANCELLED (which must return 0, or lws closes its cancel pipe and no
// wake-up ever arrives again), in FIFO order.
//
// `WebSocketConnection` objects are confined to their loop thread: they may be passed around
// (they are @unchecked Sendable so that closures given to `execute` can capture them), but their
// members may only be used on the loop thread.

/// Base of the server and client loops: one lws context, its thread, its inbox, the shared
/// per-connection plumbing (receive, writable, close, destroy) and the shutdown sequence.
class ServiceLoop: @unchecked Sendable {
    // Immutable after init.
    let logger: Logger
    let threadName: String
    let maxMessageBytes: Int
    /// Text messages and close reasons that are not UTF-8 close with 1007 (checked by us, not lws:
    /// `UTF8Validator`).
    let validatesUTF8: Bool

    /// State shared with other threads; everything else below is loop-thread confined (or
    /// touched by the starting thread before the loop thread exists).
    private struct Shared: ~Copyable {
        var work: [@Sendable () -> Void] = []
        /// The context may receive `lws_cancel_service` (set after creation, cleared before destroy).
        var context: ContextHandle?
        var started = false
        var finished = false
        var shutdownRequest: Duration?
        var thread: pthread_t?
    }
    private let shared = Mutex(Shared())
    private let loopThread = Atomic<UInt>(0)

    // Loop-thread state.
    private(set) var context: OpaquePointer?
    private var drainBuffer: [@Sendable () -> Void] = []
    private var scratch: UnsafeMutablePointer<UInt8>?
    private var scratchCapacity = 0
    let connectionIDs = Atomic<UInt64>(1)
    /// Opened (handshake done) and not yet destroyed connections: changed on the loop thread,
    /// read from any (a server's shard figures).
    let openConnectionCount = Atomic<Int>(0)
    var openConnections: Int { openConnectionCount.load(ordering: .relaxed) }
    /// Seconds counted by the keepalive sweep (server); connections note when they last heard
    /// from their peer in these units.
    var keepaliveTick = 0

    enum Phase { case running, draining, closing }
    private(set) var phase = Phase.running
    /// Set while lws_context_destroy runs (connections still alive are being torn down).
    private(set) var isDestroying = false
    private var drainDeadline = ContinuousClock.now
    private var finalDeadline = ContinuousClock.now

    /// The libev loop driving the context (epoll), or nil when lws polls by itself.
    private var libevLoop: OpaquePointer?
    /// Keeps lws's libev timer armed at most 250 ms ahead (see the shim header).
    private var heartbeat: UnsafeMutablePointer<tether_heartbeat>?
    private var foreignLoops: UnsafeMutablePointer<UnsafeMutableRawPointer?>?

    // C memory lws keeps pointers to for the context's whole life.
    private var cStrings: [UnsafeMutablePointer<CChar>] = []
    private(set) var protocols: UnsafeMutablePointer<lws_protocols>?
    private var retryTable: UnsafeMutablePointer<UInt32>?
    private(set) var retryPolicy: UnsafeMutablePointer<lws_retry_bo_t>?
    private var extensions: UnsafeMutablePointer<lws_extension>?

    init(logger: Logger, threadName: String, maxMessageBytes: Int, validatesUTF8: Bool) {
        self.logger = logger
        self.threadName = threadName
        self.maxMessageBytes = max(0, maxMessageBytes)
        self.validatesUTF8 = validatesUTF8
    }

    deinit {
        freeContextStorage()
        scratch?.deallocate()
    }

    // MARK: Subclass hooks

    /// Role-specific callback reasons (everything the shared handler does not consume).
    func handleOther(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                     _ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
        lws_callback_http_dummy(wsi, reason, user, input, len)
    }

    /// Called on the loop thread when shutdown starts; returns true to drain first (server),
    /// false to close at once (client).
    func shutdownWillBegin() -> Bool { false }

    /// Close code and reason sent to every connection still open when shutdown closes them.
    var shutdownClose: (code: UInt16, reason: String) { (1001, "going away") }

    /// Called on the loop thread after the context is destroyed.
    func loopDidFinish() {}

    /// Called on the loop thread about once a second (every fourth heartbeat).
    func everySecond() {}

    /// A connection is gone (called once, from `WebSocketConnection.finish`).
    func connectionFinished(_ connection: WebSocketConnection) {}

    // MARK: C storage

    /// A C copy of `string` that lives until the context is destroyed.
    func keepCString(_ string: String) -> UnsafePointer<CChar> {
        let copy = strdup(string)!
        cStrings.append(copy)
        return UnsafePointer(copy)
    }

    /// Builds the protocol list: one WebSocket protocol at index 0 (so clients offering no
    /// subprotocol, plain HTTP and WSI_DESTROY all land on it), then the terminator.
    ///
    /// `wholeWrites`: lws hands at most `tx_packet_size` bytes (0: `rx_buffer_size`, 4 KiB) to
    /// one send() and copies the rest aside for later writable callbacks, 4 KiB at a time. The
    /// server lifts that bound so a packed write (`PackedFrames`) or a large snapshot goes to
    /// the socket in one call; it must also exceed any single write, because OpenSSL requires a
    /// write it could not finish to be retried with the same length.
    func makeProtocols(name: String, wholeWrites: Bool = false) -> UnsafeMutablePointer<lws_protocols> {
        let list = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        list.initialize(repeating: lws_protocols(), count: 2)
        list[0].name = keepCString(name)
        list[0].callback = lwsCallback
        list[0].per_session_data_size = 0
        list[0].rx_buffer_size = 4096
        list[0].tx_packet_size = wholeWrites ? 1 << 30 : 0
        protocols = list
        return list
    }

    /// The extension list with lws's permessage-deflate (RFC 7692), for `info.extensions`. A
    /// client offers it without context takeover either way, so every message stands alone:
    /// what the server compressed once can go to every client as it is.
    func makeDeflateExtension() -> UnsafePointer<lws_extension> {
        let list = UnsafeMutablePointer<lws_extension>.allocate(capacity: 2)
        list.initialize(repeating: lws_extension(), count: 2)
        list[0].name = keepCString(Self.deflateExtensionName)
        list[0].callback = lws_extension_callback_pm_deflate
        list[0].client_offer = keepCString("\(Self.deflateExtensionName); server_no_context_takeover; client_no_context_takeover")
        extensions = list
        return UnsafePointer(list)
    }

    static let deflateExtensionName = "permessage-deflate"

    /// Whether lws activated permessage-deflate on `wsi` (asked once the handshake is done).
    /// lws 4.1 has no direct query: setting an extension option fails exactly when that extension
    /// is not active on the connection, and this option (the size of the chunks lws inflates
    /// into, capped by the protocol's receive buffer) is harmless to set.
    static func deflateIsActive(on wsi: OpaquePointer) -> Bool {
        lws_set_extension_option(wsi, deflateExtensionName, "rx_buf_size", "12") == 0
    }

    /// Keepalive policy: ping after `ping` seconds without rx, hang up after `idle`. Without
    /// either, a policy of zeros: lws would otherwise apply its default (ping at 300 s, hang up
    /// at 310 s), one timer per connection inserted into a list sorted by deadline that it
    /// walks from the head, so a storm of n connections costs O(n²) (KeepaliveSweep says more).
    func makeRetryPolicy(ping: Duration?, idle: Duration?) -> UnsafeMutablePointer<lws_retry_bo_t>? {
        guard ping != nil || idle != nil else {
            let policy = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
            policy.initialize(to: lws_retry_bo_t())  // secs_since_valid_hangup 0: no validity timer
            retryPolicy = policy
            return policy
        }
        var hangup = idle.map { min(wholeSeconds($0), 65_534) } ?? 0
        var pingSecs = ping.map { min(wholeSeconds($0), 65_534) } ?? 0
        if hangup == 0 { hangup = min(65_535, pingSecs * 2 + 1) }
        if pingSecs == 0 || pingSecs >= hangup { pingSecs = max(1, hangup / 2) }
        if hangup <= pingSecs { hangup = pingSecs + 1 }
        let table = UnsafeMutablePointer<UInt32>.allocate(capacity: 3)
        table[0] = 1000; table[1] = 2000; table[2] = 3000
        retryTable = table
        let policy = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
        policy.initialize(to: lws_retry_bo_t())
        policy.pointee.retry_ms_table = UnsafePointer(table)
        policy.pointee.retry_ms_table_count = 3
        policy.pointee.conceal_count = 3
        policy.pointee.secs_since_valid_ping = UInt16(clamping: pingSecs)
        policy.pointee.secs_since_valid_hangup = UInt16(clamping: hangup)
        policy.pointee.jitter_percent = 0
        retryPolicy = policy
        return UnsafeMutablePointer(policy)
    }

    /// Creates the context on a libev loop (epoll: the cost of a service round follows the ready
    /// sockets, not all of them; measured at 10,000 connections: 1.03 cores and p99 35 ms with
    /// lws's poll() loop, 0.2 cores and p99 2 ms on epoll). If lws can't load its libev plugin,
    /// the context runs on lws's own poll() loop.
    func createContext(_ info: inout lws_context_creation_info) -> OpaquePointer? {
        if let loop = tether_ev_loop_new() {
            let loops = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 1)
            loops.initialize(to: UnsafeMutableRawPointer(loop))
            var withLibev = info
            withLibev.options |= TETHER_OPT_LIBEV
            withLibev.foreign_loops = loops
            if let context = lws_create_context(&withLibev) {
                libevLoop = loop
                foreignLoops = loops
                return context
            }
            loops.deallocate()
            tether_ev_loop_destroy(loop)
            logger.notice("lws could not use libev; falling back to its poll() loop")
        }
        return lws_create_context(&info)
    }

    /// Destroys a context that never got a service thread (failed start).
    func destroyUnstartedContext(_ context: OpaquePointer?) {
        if let context { lws_context_destroy(context) }
        freeContextStorage()
    }

    private func freeContextStorage() {
        if let libevLoop { tether_ev_loop_destroy(libevLoop) }
        libevLoop = nil
        foreignLoops?.deallocate()
        foreignLoops = nil
        for s in cStrings { free(s) }
        cStrings = []
        if let protocols { protocols.deinitialize(count: 2); protocols.deallocate() }
        protocols = nil
        retryTable?.deallocate(); retryTable = nil
        if let extensions { extensions.deinitialize(count: 2); extensions.deallocate() }
        extensions = nil
        if let retryPolicy { retryPolicy.deinitialize(count: 1); retryPolicy.deallocate() }
        retryPolicy = nil
    }

    /// Context creation info pre-filled with what every loop needs.
    func baseContextInfo(fdLimit wanted: Int) -> lws_context_creation_info {
        var info = lws_context_creation_info()
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.fd_limit_per_thread = UInt32(clamping: fileDescriptorLimit(wanted: wanted))
        info.count_threads = 1
        return info
    }

    /// The `fd_limit_per_thread` to give lws: 0 (lws sizes its fd table to RLIMIT_NOFILE) when
    /// the soft limit fits `wanted` connections, raising it toward the hard limit if needed.
    ///
    /// A smaller explicit limit would make lws look sockets up by scanning its whole table on
    /// every event (measured: 6 % of the server's CPU at 1,000 connections). Connections beyond
    /// `wanted` are refused before the process runs out of descriptors, so lws never spins on a
    /// failing accept(). Only when the hard limit is too low is the table capped (and lookups
    /// slow), which also keeps accept() from failing.
    private func fileDescriptorLimit(wanted: Int) -> Int {
        let needed = wanted + 64
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return max(64, needed) }
        var soft = Int(clamping: limit.rlim_cur)
        let hard = Int(clamping: limit.rlim_max)
        if soft < needed + 128 && hard > soft {
            var raised = limit
            raised.rlim_cur = rlim_t(min(hard, needed + 128))
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 {
                soft = Int(clamping: raised.rlim_cur)
                logger.notice("raised RLIMIT_NOFILE soft limit to \(soft)")
            }
        }
        if soft >= needed + 128 { return 0 }
        // Leave room for the process' other files: past RLIMIT_NOFILE lws spins in accept().
        let usable = max(64, soft - 128)
        logger.warning("RLIMIT_NOFILE (\(soft)) allows only about \(usable - 64) connections, \(wanted) configured")
        return usable
    }

    // MARK: Thread

    /// Hands the created context to a new service thread.
    func startThread(context: OpaquePointer) throws {
        self.context = context
        shared.withLock { $0.context = ContextHandle(pointer: context) }
        var tid = pthread_t()
        let box = Unmanaged.passRetained(ThreadBody { [self] in self.run() }).toOpaque()
        let rc = pthread_create(&tid, nil, threadEntry, box)
        if rc != 0 {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            shared.withLock { $0.context = nil }
            self.context = nil
            lws_context_destroy(context)
            freeContextStorage()
            throw TransportError.startFailed("cannot create the service thread (error \(rc))")
        }
        shared.withLock { $0.thread = tid }
    }

    /// Marks the loop as started; throws if it already was.
    func claimStart() throws {
        try shared.withLock { state in
            if state.started { throw TransportError.alreadyStarted }
            state.started = true
        }
    }

    /// Undoes `claimStart` after a failed start.
    func releaseStart() {
        shared.withLock { $0.started = false }
    }

    var isOnLoopThread: Bool {
        loopThread.load(ordering: .relaxed) == currentThreadKey()
    }

    private func run() {
        loopThread.store(currentThreadKey(), ordering: .relaxed)
        tether_set_thread_name(String(threadName.prefix(15)))
        TransportLog.beginCapture()
        guard let context else {
            shared.withLock { $0.finished = true }
            return
        }
        heartbeat = tether_heartbeat_start(context)
        var secondsAt: UInt = 0
        while true {
            // One round: wait for something (a socket, a timer, a wake-up), handle what is ready.
            let n = libevLoop.map { tether_ev_run_once($0) } ?? lws_service(context, 0)
            if n < 0 {
                logger.error("lws_service failed (\(n)); stopping the transport loop")
                break
            }
            if let beats = heartbeat?.pointee.beats, beats >= secondsAt + 4 {
                secondsAt = beats
                everySecond()
            }
            if phase != .running {
                let now = ContinuousClock.now
                if phase == .draining && now >= drainDeadline { beginClosingAll() }
                if openConnections == 0 || now >= finalDeadline { break }
            }
        }
        // Run work that is already queued, then refuse more: nothing may touch lws after this.
        while true {
            let last: [@Sendable () -> Void] = shared.withLock { state in
                let work = state.work
                state.work = []
                if work.isEmpty { state.context = nil }
                return work
            }
            if last.isEmpty { break }
            for item in last { item() }
        }
        // Destroying the context destroys the remaining wsis: WSI_DESTROY => connectionClosed.
        tether_heartbeat_stop(heartbeat)
        heartbeat = nil
        isDestroying = true
        lws_context_destroy(context)
        self.context = nil
        freeContextStorage()
        TransportLog.endCapture()
        loopDidFinish()
        shared.withLock { $0.finished = true }
    }

    // MARK: Inbox

    /// Runs `work` on the loop thread, after everything given to it before. Returns false (and
    /// drops `work`) when the loop is not running.
    @discardableResult
    func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        shared.withLock { state in
            guard let context = state.context else { return false }
            let wasEmpty = state.work.isEmpty
            state.work.append(work)
            if wasEmpty { lws_cancel_service(context.pointer) }
            return true
        }
    }

    private func drainInbox() {
        shared.withLock { state in swap(&state.work, &drainBuffer) }
        if drainBuffer.isEmpty { return }
        for item in drainBuffer { item() }
        drainBuffer.removeAll(keepingCapacity: drainBuffer.count <= 1024)
        inboxDidDrain()
    }

    /// Called on the loop thread after a batch of `execute` work ran (subclass hook).
    func inboxDidDrain() {}

    // MARK: Shutdown

    /// Starts the shutdown and, unless called on the loop thread, waits for the loop to finish
    /// and joins it. `deadline` bounds the whole sequence (drain, close handshakes, destroy).
    func shutdown(deadline requested: Duration) {
        beginShutdown(deadline: requested)
        if isOnLoopThread {
            // Cannot join ourselves: detach so the thread's resources go when it ends. A later
            // shutdown from another thread still waits for `finished`.
            let own: pthread_t? = shared.withLock { state in
                let t = state.thread
                state.thread = nil
                return t
            }
            if let own { pthread_detach(own) }
            return
        }
        // Wait for the loop thread; poke it so lws_service (which may sleep for up to 30 s in
        // poll) returns often enough to check the deadlines.
        while true {
            let done: Bool = shared.withLock { state in
                if state.finished || !state.started { return true }
                if let context = state.context { lws_cancel_service(context.pointer) }
                return false
            }
            if done { break }
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)
        }
        let joinable: pthread_t? = shared.withLock { state in
            let t = state.thread
            state.thread = nil
            return t
        }
        if let joinable { pthread_join(joinable, nil) }
    }

    /// Starts the shutdown without waiting for it (several loops then stop side by side).
    func beginShutdown(deadline requested: Duration) {
        let deadline = min(max(requested, .zero), .seconds(3_600))
        let first: Bool = shared.withLock { state in
            guard state.started, state.shutdownRequest == nil else { return false }
            state.shutdownRequest = deadline
            return true
        }
        if first {
            _ = execute { [self] in self.startDraining(deadline: deadline) }
        }
    }

    private func startDraining(deadline: Duration) {
        guard phase == .running else { return }
        let now = ContinuousClock.now
        finalDeadline = now + deadline
        drainDeadline = now + deadline / 2
        phase = .draining
        if shutdownWillBegin() {
            requestWritableForAll()
        } else {
            beginClosingAll()
        }
    }

    private func beginClosingAll() {
        phase = .closing
        requestWritableForAll()
    }

    private func requestWritableForAll() {
        guard let context, let protocols else { return }
        lws_callback_on_writable_all_protocol(context, protocols)
    }

    // MARK: Scratch buffer

    /// The loop's private write buffer with `TETHER_LWS_PRE` bytes of headroom. lws writes the
    /// frame header in front of the payload and masks client payloads in place, so writes never
    /// go out of caller-owned or shared storage. Returns the payload start.
    func scratchPayload(capacity: Int) -> UnsafeMutablePointer<UInt8> {
        let pre = Int(TETHER_LWS_PRE)
        let needed = pre + capacity
        if let scratch, needed <= scratchCapacity { return scratch + pre }
        var size = max(4096, scratchCapacity)
        while size < needed { size *= 2 }
        scratch?.deallocate()
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        scratch = buffer
        scratchCapacity = size
        return buffer + pre
    }

    // MARK: Callback dispatch

    fileprivate func handle(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                            _ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            drainInbox()
            return 0
        case LWS_CALLBACK_RECEIVE, LWS_CALLBACK_CLIENT_RECEIVE:
            guard let connection = WebSocketConnection.from(wsi) else { return -1 }
            return connection.didReceive(input, len)
        case LWS_CALLBACK_SERVER_WRITEABLE, LWS_CALLBACK_CLIENT_WRITEABLE:
            guard let connection = WebSocketConnection.from(wsi) else {
                return lws_callback_http_dummy(wsi, reason, user, input, len)
            }
            return connection.didBecomeWritable()
        case LWS_CALLBACK_RECEIVE_PONG:
            WebSocketConnection.from(wsi)?.heardFromPeer()
            return 0
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            return WebSocketConnection.from(wsi)?.peerSentClose(input, len) ?? 0
        case LWS_CALLBACK_WSI_DESTROY:
            guard let connection = WebSocketConnection.from(wsi) else { return handleOther(wsi, reason, user, input, len) }
            lws_set_opaque_user_data(wsi, nil)
            connection.finish()
            return 0
        default:
            return handleOther(wsi, reason, user, input, len)
        }
    }
}

/// The one C callback of every protocol of every context: finds the owning loop through the
/// context's user pointer.
let lwsCallback: @convention(c) (OpaquePointer?, lws_callback_reasons, UnsafeMutableRawPointer?,
                                 UnsafeMutableRawPointer?, Int) -> Int32 = { wsi, reason, user, input, len in
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
        return 0
    }
    let loop = Unmanaged<ServiceLoop>.fromOpaque(owner).takeUnretainedValue()
    return loop.handle(wsi, reason, user, input, len)
}

/// An lws context pointer held by other threads only to call `lws_cancel_service` on it, under
/// the inbox lock, while the context is alive (the loop clears it under the same lock before
/// destroying the context).
struct ContextHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

// MARK: - Threads

final class ThreadBody {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

let threadEntry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { arg in
    guard let arg else { return nil }
    let body = Unmanaged<ThreadBody>.fromOpaque(arg).takeRetainedValue()
    body.body()
    return nil
}

/// Runs `body` on a new detached thread (used by the async shutdown variants).
func detachThread(_ body: @escaping @Sendable () -> Void) {
    var tid = pthread_t()
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    if pthread_create(&tid, nil, threadEntry, box) == 0 {
        pthread_detach(tid)
    } else {
        Unmanaged<ThreadBody>.fromOpaque(box).release()
        body()
    }
}

func wholeSeconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    if seconds < 0 { return 0 }
    return Int(clamping: seconds) + (attoseconds > 0 ? 1 : 0)
}
