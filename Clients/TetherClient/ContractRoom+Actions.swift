import TetherContract
import TetherJSON
import TetherProtocol

extension ContractRoom {
    /// `room.increment`: the contract's action, to call (`try await room.increment(.init(by: 2))`).
    public subscript<Args>(dynamicMember action: KeyPath<C.Type, ContractAction<C, Args>>) -> ContractCall<C, Args> {
        ContractCall(room: self, action: C.self[keyPath: action])
    }

    /// Sends `action` with `args` and returns the ack's version (`RemoteRoom.send`: queued while
    /// not connected, run once). A refusal whose `reason` is a case of `C.Failure` is thrown as
    /// that case; every other error as `TetherClientError`. An action the server's contract
    /// lacks (`contractCheck`) fails at once with `unknown_action`, as the server would answer.
    ///
    /// `predict` changes the shown state as the action is expected to, until its answer.
    @discardableResult
    public func send<Args>(_ action: ContractAction<C, Args>, _ args: Args, timeout: Duration? = nil,
                           predict: ((inout C.State) -> Void)? = nil) async throws -> Int {
        if case .incompatible(let comparison) = contractCheck.value, comparison.missingActions.contains(action.name) {
            throw TetherClientError.server(ProtocolError(
                .unknownAction, "\(kind) has no action \"\(action.name)\" (the server's contract, checked at join, does not declare it)",
                room: remote.name))
        }
        let json = try JSONValueEncoder().encode(args)
        do {
            return try await remote.send(action.name, json, timeout: timeout, predict: predict.map(Self.jsonPrediction))
        } catch TetherClientError.server(let error) {
            if let reason = error.reason, let failure = C.Failure(rawValue: reason) { throw failure }
            throw TetherClientError.server(error)
        }
    }

    /// A typed prediction run on the JSON mirror: the shown document decoded as `C.State`,
    /// changed, encoded, and the members that changed written back (members `C` does not know
    /// stay). A document that does not decode is left as it is.
    static func jsonPrediction(_ predict: @escaping (inout C.State) -> Void) -> (inout JSON) -> Void {
        { shown in
            let encoder = JSONValueEncoder()
            let base = shown == .null ? C.defaultState.flatMap { try? encoder.encode($0) } ?? shown : shown
            guard var members = base.objectValue, let before = try? JSONValueDecoder().decode(C.State.self, from: base) else { return }
            var after = before
            predict(&after)
            guard let old = (try? encoder.encode(before))?.objectValue, let new = (try? encoder.encode(after))?.objectValue else { return }
            for (name, value) in new where old[name] != value { members[name] = value }
            for name in old.keys where new[name] == nil { members[name] = .null }  // a nil member is published as null
            shown = .object(members)
        }
    }
}

/// One action of a `ContractRoom`, ready to call: `room.increment(.init(by: 2))`, `room.reset()`.
@MainActor
public struct ContractCall<C: Contract, Args: Codable & Sendable> {
    let room: ContractRoom<C>
    public let action: ContractAction<C, Args>

    /// `ContractRoom.send(action, args, ...)`.
    @discardableResult
    public func callAsFunction(_ args: Args, timeout: Duration? = nil, predict: ((inout C.State) -> Void)? = nil) async throws -> Int {
        try await room.send(action, args, timeout: timeout, predict: predict)
    }
}

extension ContractCall where Args == NoArgs {
    /// An action without arguments: `room.reset()`.
    @discardableResult
    public func callAsFunction(timeout: Duration? = nil, predict: ((inout C.State) -> Void)? = nil) async throws -> Int {
        try await room.send(action, NoArgs(), timeout: timeout, predict: predict)
    }
}

extension ContractRoom {
    /// Replaces this connection's presence data (`RemoteRoom.setPresence`).
    public func setPresence(_ data: C.Presence) async throws {
        try await remote.setPresence(JSONValueEncoder().encode(data))
    }
}
