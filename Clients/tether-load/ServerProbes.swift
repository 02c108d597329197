/// The servers a run loads, one probe per distinct host and port, read together: CPU seconds,
/// memory and /metrics counters are sums over them, so a cluster's cost per delivery compares
/// with one daemon's.
struct ServerProbes: Sendable {
    let probes: [ServerProbe]

    /// `pids`, when given, pairs with `urls` (the measured process of each).
    init(urls: [String], pids: [Int32]?) {
        var probes: [ServerProbe] = []
        for (index, url) in urls.enumerated() {
            let probe = ServerProbe(url: url, pid: pids?[index])
            if !probes.contains(where: { $0.host == probe.host && $0.port == probe.port }) { probes.append(probe) }
        }
        self.probes = probes
    }

    /// Where the figures come from: "proc", "metrics" or "none" (each server alike), else "mixed".
    var source: String {
        let sources = Set(probes.map(\.source))
        return sources.count == 1 ? sources.first! : "mixed"
    }

    var pids: [Int32] { probes.compactMap(\.pid) }

    /// The first server that does not answer `GET /healthz`, as an error (only plain ws:// ones
    /// are asked: /healthz is not read over TLS).
    func unreachable() -> String? {
        for probe in probes where probe.httpAllowed {
            if (try? probe.httpGET("/healthz")) == nil { return "no answer from \(probe.url) (GET /healthz failed)" }
        }
        return nil
    }

    /// Every server's figures now, summed (a figure missing for one server is missing).
    func sample(withMetrics: Bool) -> ServerSample {
        let samples = probes.map { $0.sample(withMetrics: withMetrics) }
        guard samples.count > 1 else { return samples.first ?? ServerSample() }
        func sum<T: AdditiveArithmetic>(_ figure: (ServerSample) -> T?) -> T? {
            var total = T.zero
            for sample in samples {
                guard let value = figure(sample) else { return nil }
                total += value
            }
            return total
        }
        var total = ServerSample()
        total.cpuSeconds = sum(\.cpuSeconds)
        total.residentBytes = sum(\.residentBytes)
        total.peakResidentBytes = sum(\.peakResidentBytes)
        for sample in samples { total.metrics.merge(sample.metrics, uniquingKeysWith: +) }
        return total
    }
}
