/// A small benchmark harness: each benchmark runs in rounds sized to about 20 ms; the report
/// gives the median time per operation over the rounds (medians resist a noisy shared machine).
struct Benchmark {
    let name: String
    /// Runs the operation `iterations` times; returns something derived from the work so the
    /// optimizer cannot drop it.
    let body: (_ iterations: Int) -> Int
}

struct BenchmarkResult {
    let name: String
    let medianNanoseconds: Double
    let minNanoseconds: Double
    let maxNanoseconds: Double
    let rounds: Int
}

enum Harness {
    // Written only from the single benchmark thread; it exists to defeat dead-code elimination.
    nonisolated(unsafe) static var sink = 0

    static func run(_ benchmark: Benchmark, rounds: Int = 15, roundTarget: Duration = .milliseconds(20)) -> BenchmarkResult {
        let clock = ContinuousClock()
        // Warm up and find how many iterations fill one round.
        var iterations = 1
        while true {
            let elapsed = clock.measure { sink &+= benchmark.body(iterations) }
            if elapsed >= roundTarget / 4 || iterations >= 1 << 30 {
                let perOp = Double(elapsed.nanoseconds) / Double(iterations)
                iterations = max(1, Int(Double(roundTarget.nanoseconds) / max(perOp, 0.01)))
                break
            }
            iterations *= 4
        }
        var samples: [Double] = []
        for _ in 0..<rounds {
            let elapsed = clock.measure { sink &+= benchmark.body(iterations) }
            samples.append(Double(elapsed.nanoseconds) / Double(iterations))
        }
        samples.sort()
        return BenchmarkResult(
            name: benchmark.name, medianNanoseconds: samples[samples.count / 2],
            minNanoseconds: samples.first!, maxNanoseconds: samples.last!, rounds: rounds)
    }

    static func format(_ nanoseconds: Double) -> String {
        switch nanoseconds {
        case ..<1_000: return String(format3(nanoseconds)) + " ns"
        case ..<1_000_000: return String(format3(nanoseconds / 1_000)) + " µs"
        default: return String(format3(nanoseconds / 1_000_000)) + " ms"
        }
    }

    private static func format3(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return "\(rounded)"
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
