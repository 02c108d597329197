import Foundation
import Histogram

/// Latency histograms are in microseconds, from 1 µs to 1 hour, 3 significant digits
/// (about 200 KiB each, whatever the number of samples).
func makeLatencyHistogram() -> Histogram<UInt64> {
    Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
}

@inline(__always)
func recordMicroseconds(_ histogram: inout Histogram<UInt64>, nanoseconds: Int) {
    let micros = UInt64(clamping: max(1, nanoseconds / 1000))
    _ = histogram.record(min(micros, 3_600_000_000))
}

/// A latency for people: µs below 1 ms, then ms, then s.
func formatMicros(_ micros: UInt64?) -> String {
    guard let micros else { return "-" }
    if micros < 1000 { return "\(micros)µs" }
    if micros < 10_000 { return String(format: "%.2fms", Double(micros) / 1000) }
    if micros < 1_000_000 { return String(format: "%.1fms", Double(micros) / 1000) }
    return String(format: "%.2fs", Double(micros) / 1e6)
}
