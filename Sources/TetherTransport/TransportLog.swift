import CLibWebSockets
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Routes libwebsockets' own log lines into swift-log.
///
/// lws logging is process-wide and takes no user pointer, so this is configured once per process:
/// the first `configure(logger:)` (or the first server/client `start()`) wins. Only lws errors and
/// warnings are enabled (logged at `.error` / `.warning`); if the configured logger's level is
/// `.debug` or lower, lws notices are enabled too and logged at `.debug`.
///
/// lws formats every line into one static buffer, so lines from two contexts logging at the same
/// instant on different threads can come out garbled; they are diagnostics, never parsed for
/// control flow (except the per-thread capture below, which only adds detail to error messages).
public enum TransportLog {
    struct State: ~Copyable {
        var logger: Logger?
        /// Recent lws error/warning lines per registered thread, used to explain failures that lws
        /// reports without detail (bind failures, TLS verification errors).
        var captures: [UInt: [String]] = [:]
    }

    static let state = Mutex(State())

    /// Configures lws logging for the whole process (idempotent: later calls only replace the
    /// logger lines are sent to).
    public static func configure(logger: Logger) {
        state.withLock { state in
            state.logger = logger
            var levels = TETHER_LLL_ERR | TETHER_LLL_WARN
            if logger.logLevel <= .debug { levels |= TETHER_LLL_NOTICE }
            lws_set_log_level(levels, lwsLogEmit)
        }
    }

    /// Configures logging with `logger` unless it was configured already.
    static func configureIfNeeded(logger: Logger) {
        let configured = state.withLock { $0.logger != nil }
        if !configured { configure(logger: logger) }
    }

    /// Starts keeping the lws error lines logged on the calling thread.
    static func beginCapture() {
        let key = currentThreadKey()
        state.withLock { $0.captures[key] = [] }
    }

    /// Stops keeping lines for the calling thread and returns what was kept.
    @discardableResult
    static func endCapture() -> [String] {
        let key = currentThreadKey()
        return state.withLock { $0.captures.removeValue(forKey: key) ?? [] }
    }

    /// Returns and clears the lines kept so far for the calling thread (capture stays on).
    static func takeCaptured() -> [String] {
        let key = currentThreadKey()
        return state.withLock { state in
            guard let lines = state.captures[key] else { return [] }
            state.captures[key] = []
            return lines
        }
    }

    static func emit(level: Int32, line: String) {
        let key = currentThreadKey()
        let (logger, captured): (Logger?, Bool) = state.withLock { state in
            guard (level & (TETHER_LLL_ERR | TETHER_LLL_WARN)) != 0, var lines = state.captures[key] else {
                return (state.logger, false)
            }
            if lines.count >= 8 { lines.removeFirst() }
            lines.append(line)
            state.captures[key] = lines
            return (state.logger, true)
        }
        guard let logger else { return }
        if captured {
            // The failing call explains itself in one line; the raw lws line is detail.
            logger.debug("lws: \(line)")
        } else if (level & TETHER_LLL_ERR) != 0 {
            logger.error("lws: \(line)")
        } else if (level & TETHER_LLL_WARN) != 0 {
            logger.warning("lws: \(line)")
        } else {
            logger.debug("lws: \(line)")
        }
    }
}

func currentThreadKey() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
}

private let lwsLogEmit: @convention(c) (Int32, UnsafePointer<CChar>?) -> Void = { level, line in
    guard let line else { return }
    var text = String(cString: line)
    while let last = text.last, last.isWhitespace { text.removeLast() }
    if text.isEmpty { return }
    TransportLog.emit(level: level, line: text)
}
