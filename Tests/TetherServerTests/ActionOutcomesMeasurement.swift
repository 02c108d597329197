import Foundation
import Testing
@testable import TetherServer
import TetherProtocol

/// What a room's record of numbered actions costs in memory (docs/DESIGN.md, "Numbered actions
/// run once"): the process's resident memory before and after filling a record with `clients`
/// clients of 64 applied numbers each, the most a client keeps (every record kept alive, so no
/// freed memory is reused by the next). Printed, not asserted:
/// run on demand with `TETHER_MEASURE=1 swift test --skip-build --filter ActionOutcomesMeasurement`.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["TETHER_MEASURE"] != nil))
struct ActionOutcomesMeasurement {
    @Test func memoryOfTheOutcomeWindow() {
        var kept: [ActionOutcomes] = []
        for clients in [1_000, ActionOutcomes.maxClients] {
            let before = Self.residentBytes()
            var outcomes = ActionOutcomes()
            for client in 0..<clients {
                let id = ClientMessage.makeClientID()  // 22 characters, as a client's hello carries
                for seq in 1...ActionOutcomes.perClient {
                    outcomes.record(ActionNumber(client: id, seq: seq + client), .applied(version: seq))
                }
            }
            let bytes = Self.residentBytes() - before
            print("outcome window: \(clients) clients x \(ActionOutcomes.perClient) numbers: \(bytes / 1024) KiB, \(bytes / clients) bytes per client, \(bytes / (clients * ActionOutcomes.perClient)) per number")
            kept.append(outcomes)
        }
        withExtendedLifetime(kept) {}
    }

    /// Resident set size, from /proc/self/statm (pages).
    static func residentBytes() -> Int {
        let fields = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ") ?? []
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }
}
