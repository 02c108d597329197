import Testing
import TetherContract
import TetherJSON
import TetherState

/// `TestRoom` with a contract's typed actions, refusals and state:
///
/// ```swift
/// let room = TestRoom(Counter.self)
/// try room.send(CounterContract.increment, .init(by: 2), produces: [.replace(path: "/count", value: 2)])
/// room.send(CounterContract.decrement, fails: CounterContract.Failure.overflow)
/// #expect(room.state(as: CounterContract.self)?.count == 2)
/// ```
extension TestRoom {
    /// `send(_:_:produces:)` with `args` typed and encoded as the contract's clients send them.
    @discardableResult
    public func send<C: Contract, Args>(_ action: ContractAction<C, Args>, _ args: Args, as viewer: Viewer = .unidentified,
                                        produces expected: [PatchOperation] = [], views expectedViews: [Viewer: [PatchOperation]] = [:],
                                        state expectedState: JSON? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> [PatchOperation] {
        try send(action.name, Self.encode(args), as: viewer, produces: expected, views: expectedViews, state: expectedState,
                 sourceLocation: sourceLocation)
    }

    /// An action that takes no arguments.
    @discardableResult
    public func send<C: Contract>(_ action: ContractAction<C, NoArgs>, as viewer: Viewer = .unidentified,
                                  produces expected: [PatchOperation] = [], views expectedViews: [Viewer: [PatchOperation]] = [:],
                                  state expectedState: JSON? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> [PatchOperation] {
        try send(action.name, nil, as: viewer, produces: expected, views: expectedViews, state: expectedState, sourceLocation: sourceLocation)
    }

    /// An action the ViewModel must refuse with `failure`; `message` when the refusal carries
    /// details (a `Refusal`), else the failure's own message.
    @discardableResult
    public func send<C: Contract, Args>(_ action: ContractAction<C, Args>, _ args: Args, as viewer: Viewer = .unidentified,
                                        fails failure: C.Failure, message: String? = nil, produces expected: [PatchOperation] = [],
                                        sourceLocation: SourceLocation = #_sourceLocation) -> [PatchOperation] {
        send(action.name, Self.encode(args), as: viewer, fails: Self.refused(failure, message), produces: expected, sourceLocation: sourceLocation)
    }

    /// A refused action that takes no arguments.
    @discardableResult
    public func send<C: Contract>(_ action: ContractAction<C, NoArgs>, as viewer: Viewer = .unidentified, fails failure: C.Failure,
                                  message: String? = nil, produces expected: [PatchOperation] = [],
                                  sourceLocation: SourceLocation = #_sourceLocation) -> [PatchOperation] {
        send(action.name, nil, as: viewer, fails: Self.refused(failure, message), produces: expected, sourceLocation: sourceLocation)
    }

    /// The document decoded as `C`'s State; nil (and a recorded issue) when it does not decode.
    public func state<C: Contract>(as contract: C.Type, sourceLocation: SourceLocation = #_sourceLocation) -> C.State? {
        do {
            return try JSONValueDecoder().decode(C.State.self, from: state)
        } catch {
            Issue.record("the document is not a \(C.self).State: \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    private static func encode<Args: Encodable>(_ args: Args) -> JSON {
        // Contract arguments are plain Codable structs: encoding one cannot fail.
        (try? JSONValueEncoder().encode(args)) ?? .object([:])
    }

    private static func refused<F: ContractFailure>(_ failure: F, _ message: String?) -> ActionError {
        .refused(reason: failure.rawValue, code: failure.code, message: message ?? failure.message)
    }
}
