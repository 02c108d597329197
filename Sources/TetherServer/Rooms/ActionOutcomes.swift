import DequeModule
import TetherJSON
import TetherProtocol

/// A numbered action's identity in a room: who numbered it (the client id of its connection's
/// `hello`; with tokens, the token's subject and the client id, so nobody can answer for
/// another's actions by guessing their client id) and its number (`seq`).
public struct ActionNumber: Hashable, Sendable {
    public let client: String
    public let seq: Int

    public init(client: String, seq: Int) {
        self.client = client
        self.seq = seq
    }
}

/// A numbered action applied at `version`: what a room's log and snapshots keep of it.
typealias AppliedAction = (number: ActionNumber, version: Int)

/// The outcomes of the numbered actions a room ran, per client, for the highest `perClient` numbers
/// of each: a repeat (a client sending an action again after its answer was lost) gets the
/// first outcome, the same ack or error, instead of running again (docs/PROTOCOL.md, "Sending an
/// action again"). Applied outcomes are stored with the step that applied them, so a restarted
/// room still knows them; on the room's executor.
struct ActionOutcomes {
    /// Numbers remembered per client: more than a client keeps unanswered (its queue's bound).
    static let perClient = 64
    /// Clients remembered per room; past it, the one that acted least recently is forgotten.
    static let maxClients = 10_000

    private struct Client {
        /// Its highest numbers, in the order recorded: the version an applied one was answered
        /// with, or -1 for one that failed (its error in `errors`). Two words a number,
        /// so a room's records stay small (see docs/DESIGN.md).
        var numbers: Deque<(seq: Int, version: Int)> = []
        var errors: [Int: ProtocolError] = [:]
        /// Numbers at or below it that are not in `numbers` may have run: the highest number let
        /// go of (or, restored from a store or snapshot, the highest restored). A number above
        /// it that is not in `numbers` never ran here (a send refused before running, say).
        var forgottenUpTo = 0
        var lastUsed: UInt64 = 0
    }

    enum Lookup {
        /// A number the room has not seen from this client: run it.
        case new
        /// Run before: its outcome.
        case repeated(ActionOutcome)
        /// Older than what the room remembers of this client (`oldest` is the oldest it does).
        case forgotten(oldest: Int?)
    }

    private var clients: [String: Client] = [:]
    /// Counts uses, to find the least recent client when there are too many.
    private var uses: UInt64 = 0

    func lookup(_ number: ActionNumber) -> Lookup {
        guard let client = clients[number.client] else { return .new }
        guard let found = client.numbers.last(where: { $0.seq == number.seq }) else {
            return number.seq > client.forgottenUpTo ? .new : .forgotten(oldest: client.numbers.map(\.seq).min())
        }
        if found.version >= 0 { return .repeated(.applied(version: found.version)) }
        return .repeated(.failed(client.errors[number.seq] ?? ProtocolError(.internal, "the outcome of this action was lost", applied: .unknown)))
    }

    /// Records the outcome of a number `lookup` called new.
    mutating func record(_ number: ActionNumber, _ outcome: ActionOutcome) {
        uses += 1
        if clients[number.client] == nil, clients.count >= Self.maxClients, let least = clients.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
            clients[least.key] = nil
        }
        var client = clients.removeValue(forKey: number.client) ?? Client()
        switch outcome {
        case .applied(let version):
            client.numbers.append((number.seq, version))
        case .failed(let error):
            client.numbers.append((number.seq, -1))
            client.errors[number.seq] = error
        }
        if client.numbers.count > Self.perClient {
            // The lowest number goes, not the first recorded: a number refused and sent again
            // after later ones ran is recorded late, and must outlive them. With at most 64 of a
            // client's numbers in flight, no unanswered number is ever let go of.
            let lowest = client.numbers.indices.min { client.numbers[$0].seq < client.numbers[$1].seq }!
            let dropped = client.numbers.remove(at: lowest)
            if dropped.version < 0 { client.errors[dropped.seq] = nil }
            client.forgottenUpTo = max(client.forgottenUpTo, dropped.seq)
        }
        client.lastUsed = uses
        clients[number.client] = client
    }

    /// Records applied outcomes as the log's entries give them, in their order.
    mutating func record(applied records: [AppliedAction]) {
        for (number, version) in records { record(number, .applied(version: version)) }
    }

    /// Starts from what a store or snapshot kept (`applied`): which numbers it let go of, or
    /// which failed, is not known, so any number not restored, up to a client's highest, is
    /// taken as forgotten (`stale_action`) rather than run again.
    mutating func restore(applied records: [AppliedAction]) {
        record(applied: records)
        for (number, _) in records {
            guard let forgotten = clients[number.client]?.forgottenUpTo else { continue }
            clients[number.client]?.forgottenUpTo = max(forgotten, number.seq)
        }
    }

    /// The error for a number older than the room remembers.
    static func forgottenError(_ number: ActionNumber, oldest: Int?) -> ProtocolError {
        let remembered = oldest.map { "it remembers your numbers from \($0) on" } ?? "it remembers none of yours"
        return ProtocolError(.staleAction, "action number \(number.seq) is older than this room remembers (\(remembered)): it was not run again, and whether it was applied is unknown",
                             applied: .unknown)
    }

    /// The applied outcomes, for a log or snapshot that carries them: a room restored from it
    /// answers their repeats (`record` each, in order).
    var applied: [AppliedAction] {
        clients.flatMap { client, record in
            record.numbers.compactMap { entry in entry.version >= 0 ? (ActionNumber(client: client, seq: entry.seq), entry.version) : nil }
        }
    }

    /// `applied`-style records as JSON, `[[client, seq, version], ...]` (a cluster's log entries
    /// and snapshots carry them).
    static func json(_ records: [AppliedAction]) -> JSON {
        .array(records.map { [.string($0.number.client), .int($0.number.seq), .int($0.version)] })
    }

    static func records(_ json: JSON?) -> [AppliedAction] {
        (json?.arrayValue ?? []).compactMap { item in
            guard let fields = item.arrayValue, fields.count == 3, let client = fields[0].stringValue,
                  let seq = fields[1].intValue, let version = fields[2].intValue else { return nil }
            return (ActionNumber(client: client, seq: seq), version)
        }
    }
}
