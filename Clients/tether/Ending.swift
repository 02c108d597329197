import ArgumentParser

/// The first outcome of a long-running command: a clean stop, or a failure (printed once, when
/// it is the first outcome) to exit with.
@MainActor
final class Ending {
    private var outcome: ExitCode??
    private var continuation: CheckedContinuation<ExitCode?, Never>?

    func stop() { finish(nil) }

    func fail(_ message: String, code: Int32 = Output.connectionFailure) {
        guard outcome == nil else { return }
        finish(Output.failure(message, code: code))
    }

    private func finish(_ failure: ExitCode?) {
        guard outcome == nil else { return }
        outcome = .some(failure)
        continuation?.resume(returning: failure)
        continuation = nil
    }

    func wait() async -> ExitCode? {
        if let outcome { return outcome }
        return await withCheckedContinuation { continuation = $0 }
    }
}
