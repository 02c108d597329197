import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU time of this process and of its busiest transport thread.
struct OwnUsage: Sendable {
    var at = monotonicNanos()
    var cpuSeconds: Double
    /// Thread id -> CPU seconds, for the lws service threads ("tether-ws-cli").
    var loopThreads: [Int: Double]

    static func now() -> OwnUsage {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1_000_000 }
        var threads: [Int: Double] = [:]
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        if let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") {
            for task in tasks {
                guard let tid = Int(task),
                      let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                      comm.hasPrefix("tether-ws-cli"),
                      let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { continue }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
                    threads[tid] = (user + system) / ticks
                }
            }
        }
        return OwnUsage(at: monotonicNanos(), cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime), loopThreads: threads)
    }

    /// The largest per-thread CPU growth since `earlier`, in seconds.
    func busiestThreadSeconds(since earlier: OwnUsage) -> Double {
        var best = 0.0
        for (tid, seconds) in loopThreads {
            best = max(best, seconds - (earlier.loopThreads[tid] ?? 0))
        }
        return best
    }
}
