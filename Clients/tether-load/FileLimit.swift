#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Raises RLIMIT_NOFILE's soft limit to what `wanted` descriptors need (up to the hard limit).
/// Returns the soft limit in force.
@discardableResult
func raiseFileLimit(wanted: Int) -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    let target = rlim_t(wanted)
    if limit.rlim_cur < target {
        var raised = limit
        raised.rlim_cur = min(limit.rlim_max, target)
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
    }
    return Int(limit.rlim_cur)
}
