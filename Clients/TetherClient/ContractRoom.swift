import TetherBinding
import TetherContract
import TetherJSON

/// A room seen through its contract `C`: the state as `C.State`, each member an observable
/// (`counter.count`), the actions as typed calls (`try await counter.increment(.init(by: 2))`),
/// the contract's refusals as its `Failure` cases, and the server's contract checked at join
/// (`contractCheck`).
///
/// ```swift
/// let counter = client.room(CounterContract.self)   // the room "counter"
/// counter.count.bind { label.text = "\($0)" }.store(in: bag)
/// try await counter.increment(.init(by: 2), predict: { $0.count += 2 })
/// ```
///
/// It is a layer over the room's JSON mirror, `remote` (presence, `isSynced`, `lastError`,
/// `leave()` and the string API): predictions, queueing and resending are the mirror's.
@MainActor
@dynamicMemberLookup
public final class ContractRoom<C: Contract> {
    /// The JSON mirror underneath.
    public let remote: RemoteRoom
    private let stateStorage: Observable<C.State>
    /// The shown state (the server's, with waiting predictions applied), decoded; `C.defaultState`
    /// before the first snapshot. A state that does not decode leaves the last good one here.
    public var state: ReadOnlyObservable<C.State> { stateStorage }
    private let viewsStorage: Observable<C.Views>
    /// This viewer's own values, decoded from the same document.
    public var views: ReadOnlyObservable<C.Views> { viewsStorage }
    private let problemStorage = Observable<String?>(nil)
    /// Why the shown document does not decode as `C.State` and `C.Views`; nil while it does.
    public var decodingProblem: ReadOnlyObservable<String?> { problemStorage }
    let checkStorage = Observable(ContractCheck.pending)
    /// How the server's contract for this room's kind compares with `C` (ContractCheck.swift).
    public var contractCheck: ReadOnlyObservable<ContractCheck> { checkStorage }
    private let membersStorage = Observable<[ContractMember<C.Presence>]>([])
    /// Who is here, by member id, their data decoded as `C.Presence` (`remote.members` as JSON).
    public var members: ReadOnlyObservable<[ContractMember<C.Presence>]> { membersStorage }

    /// `C`'s schema, as the client compares it with the server's.
    let schema = ContractSchema(C.self)
    /// The connection's and the mirror's listeners, for as long as this room lives.
    var subscriptions: [Cancellable] = []
    /// Counts checks, so that the answer of one overtaken by a reconnect is dropped.
    var checkGeneration = 0
    var wasConnected = false

    init(remote: RemoteRoom) {
        guard let initial = C.defaultState else {
            preconditionFailure("\(C.self) has no defaultState: a ContractRoom shows it before the first snapshot")
        }
        guard let noViews = try? JSONValueDecoder().decode(C.Views.self, from: .object([:])) else {
            preconditionFailure("\(C.self).Views does not decode from {}: every Views member must be Optional")
        }
        self.remote = remote
        stateStorage = Observable(initial)
        viewsStorage = Observable(noViews)
        refresh()
        subscriptions.append(remote.observeChanges { [weak self] _ in self?.refresh() })
        subscriptions.append(remote.members.bind { [weak self] members in self?.mirrorMembers(members) })
        if let client = remote.client {
            subscriptions.append(client.connectionState.bind { [weak self] state in self?.connectionChanged(state) })
        }
    }

    /// The kind whose contract this room has: its name up to the first `:`.
    var kind: String { String(remote.name.prefix { $0 != ":" }) }

    // MARK: Members of the state

    /// `room.count`: the State member as an observable that fires when the state changed.
    public subscript<Value>(dynamicMember member: KeyPath<C.State, Value>) -> ReadOnlyObservable<Value> {
        state.map { $0[keyPath: member] }
    }

    /// `room.count`: the State member as an observable that fires only when it changed.
    public subscript<Value: Equatable>(dynamicMember member: KeyPath<C.State, Value>) -> ReadOnlyObservable<Value> {
        state.map { $0[keyPath: member] }.removeDuplicates()
    }

    // MARK: From the mirror

    /// Decodes the shown document again; publishes only what changed.
    private func refresh() {
        let shown = remote.state
        guard shown != .null else { return }  // no snapshot yet: the defaults stay
        var problems: [String] = []
        do {
            let decoded = try JSONValueDecoder().decode(C.State.self, from: shown)
            if decoded != stateStorage.value { stateStorage.value = decoded }
        } catch {
            problems.append("the state does not decode as \(C.self).State: \(Self.readable(error))")
        }
        do {
            let decoded = try JSONValueDecoder().decode(C.Views.self, from: shown)
            if decoded != viewsStorage.value { viewsStorage.value = decoded }
        } catch {
            problems.append("the views do not decode as \(C.self).Views: \(Self.readable(error))")
        }
        let problem = problems.isEmpty ? nil : "room \(remote.name): " + problems.joined(separator: "; ")
        guard problem != problemStorage.value else { return }
        if let problem { remote.client?.logger.warning("\(problem); keeping the last state that did") }
        problemStorage.value = problem
    }

    private func mirrorMembers(_ members: [String: RoomMember]) {
        let typed = members.values.sorted { $0.id < $1.id }.map(ContractMember<C.Presence>.init)
        if typed != membersStorage.value { membersStorage.value = typed }
    }

    static func readable(_ error: any Error) -> String {
        (error as? DecodingError)?.readableDescription ?? "\(error)"
    }
}

/// One connection in a room's presence, its data decoded as the contract's `Presence`.
public struct ContractMember<Presence: Decodable & Equatable & Sendable>: Equatable, Sendable {
    /// The connection's session id.
    public let id: String
    /// The token's subject with auth, else the connection's own id.
    public let user: String
    /// Nil when the member's data does not decode as `Presence` (a client of another contract).
    public let data: Presence?

    init(_ member: RoomMember) {
        id = member.id
        user = member.user
        data = try? JSONValueDecoder().decode(Presence.self, from: member.data)
    }
}

extension TetherClient {
    /// The room `name` (default: the contract's kind, `C.kind`) seen through contract `C`: one
    /// per room and contract, kept while the room is joined, as `room(_:)` keeps its mirror.
    public func room<C: Contract>(_ contract: C.Type, _ name: String? = nil) -> ContractRoom<C> {
        let remote = room(name ?? C.kind)
        if let existing = remote.contractRooms[ObjectIdentifier(C.self)] as? ContractRoom<C> { return existing }
        let typed = ContractRoom<C>(remote: remote)
        remote.contractRooms[ObjectIdentifier(C.self)] = typed
        return typed
    }
}
