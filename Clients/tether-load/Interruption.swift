import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ctrl-C (or SIGTERM) during a run. First: stop publishing and report what was measured.
/// Second: leave at once.
enum Interruption {
    static func install() {
        signal(SIGINT, onInterrupt)
        signal(SIGTERM, onInterrupt)
    }

    static var requested: Bool { interrupted.load(ordering: .relaxed) }
}

private let interrupted = Atomic<Bool>(false)

private let onInterrupt: @convention(c) (Int32) -> Void = { _ in
    if interrupted.exchange(true, ordering: .relaxed) { _exit(130) }
}
