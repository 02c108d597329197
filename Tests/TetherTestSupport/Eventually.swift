import Foundation

/// Waits until `condition` holds, checking every 10 ms on the main actor; throws on timeout.
@MainActor
public func eventually(
    _ description: @autoclosure () -> String = "condition", timeout: Duration = .seconds(10),
    _ condition: @MainActor () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: description()) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public var description: String { "timed out waiting for \(what)" }
}

/// `eventually` for code off the main actor that may block: polls every 50 ms on the calling
/// thread; throws `TimedOut` after `timeout`.
public func waitUntil(_ description: @autoclosure () -> String = "condition", timeout: Duration = .seconds(10),
                      _ condition: () throws -> Bool) throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: description()) }
        Thread.sleep(forTimeInterval: 0.05)
    }
}
