import Foundation
import TetherJSON
import TetherProtocol
import TetherTransport

/// Which certificates a `wss://` server may present: `.system`, `.caFile(path)` or `.insecure`.
public typealias TLSTrust = TetherTransport.TLSTrust

/// How a `TetherClient` connects and reconnects.
public struct ClientOptions: Sendable {
    /// `ws://host:port/` or `wss://host:port/`; several, comma-separated, for the nodes of a
    /// cluster: the client connects to the first and moves to the next when its node is lost.
    public var url: String
    /// Sent with every join; servers with an auth secret require one.
    public var token: String?
    /// Which certificates a `wss://` server may present.
    public var trust: TLSTrust = .system
    /// Reconnect after a drop: exponential backoff with jitter, capped.
    public var reconnect = ReconnectPolicy()
    /// How long an action may wait to be sent (queued while not connected) before it fails with
    /// `TetherClientError.notSent`; `send` takes its own. Once sent, an action waits for its
    /// answer as long as the client lives (docs/CLIENTS.md, "Actions"). Also the time a
    /// `describe` or presence update waits for its answer.
    public var actionTimeout: Duration = .seconds(10)
    /// Actions waiting for their answers, queued or sent, at most; past it `send` fails at once
    /// with `TetherClientError.queueFull`.
    public var maxQueuedActions = 1_000
    public var maxMessageBytes = 16 << 20
    /// Offer permessage-deflate: a server started with `--compression on` then sends its large
    /// frames (snapshots, big patches) compressed. Costs the client an inflate per such frame.
    public var compression = false
    /// Who this client is, said in a `hello` on every connection: a random id kept for the
    /// client's life (actions are told apart by it), and optionally `user`, a stable anonymous
    /// identity kept across runs. Without tokens the server knows the client as `user`, else as
    /// `clientID` (docs/PROTOCOL.md, "Saying who you are"): a claim, not authentication.
    public var clientID = ClientMessage.makeClientID()
    public var user: String?
    /// Presence data sent with every join (e.g. `{"name": "kim"}`): the client is then listed in
    /// rooms that keep presence and mirrors who is there (`RemoteRoom.members`). Nil: neither.
    public var presence: JSON?
    /// Without `presence`: mirror who is there without being listed, as a spectator (a
    /// dashboard, a wall screen). Ignored with `presence`, which lists the client anyway.
    public var watchPresence = false

    /// The URLs in `url`, in order.
    public var urls: [String] {
        let urls = url.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return urls.isEmpty ? [url] : urls
    }

    public init(url: String, token: String? = nil) {
        self.url = url
        self.token = token
    }
}

public struct ReconnectPolicy: Sendable {
    /// Whether to reconnect at all (one-shot commands turn it off).
    public var isEnabled = true
    public var initialDelay: Duration = .milliseconds(200)
    public var maximumDelay: Duration = .seconds(5)
    public var multiplier = 2.0

    public init() {}

    /// The wait before attempt `attempt` (1-based): `initial × multiplier^(attempt-1)`, capped,
    /// then scaled by a random factor in 0.5...1 so clients dropped together don't return in step.
    public func delay(forAttempt attempt: Int, jitter: Double = Double.random(in: 0.5...1)) -> Duration {
        let exponent = Double(max(0, attempt - 1))
        let base = min(initialDelay.seconds * pow(multiplier, exponent), maximumDelay.seconds)
        return .milliseconds(Int((base * jitter * 1000).rounded()))
    }
}

extension Duration {
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
