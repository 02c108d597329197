import TetherTransport

/// What one run does, fixed before any connection opens. Shared read-only by every thread.
struct LoadConfiguration: Sendable {
    /// Connections go to these in turn (the nodes of a cluster; usually one daemon).
    var urls: [String]
    /// Whom to trust for wss:// (--ca, --insecure).
    var trust: TLSTrust = .system
    /// Offer permessage-deflate on every connection (--compression).
    var compression = false
    /// The servers' processes, paired with `urls` (--server-pid), else found for local URLs.
    var serverPids: [Int32]?
    /// Subscribers: connections that join a room and check its stream.
    var clients: Int
    var rooms: Int
    /// Extra connections that send the `set` actions (they join nothing).
    var publishers: Int
    /// Total actions per second over all publishers and rooms.
    var rate: Double
    var duration: Double
    var warmup: Double
    /// New connections per second while connecting.
    var ramp: Double
    /// First connections open at once, at most (0: no limit).
    var maxInFlight = 1000
    /// The server restarts during the run (`--expect-restart`): subscribers retry until it is back.
    var expectRestart = false
    var payloadBytes: Int
    /// Subscriber disconnect + reconnect (with resume) per second while actions flow.
    var churn: Double
    var token: String?
    /// Subscriber loop threads (one WebSocketClient, i.e. one lws context, each).
    var threads: Int
    /// Longest wait, after the last action, for acks and for every subscriber to catch up.
    var drainTimeout: Double
    var connectTimeout: Double
    /// Pause of a subscriber loop thread between service rounds while frames flow (0: none).
    var batchNanos: Int
    /// Decode every patch frame fully too and compare with the scanner (a self-test; slow).
    var verifyScanner = false
    /// A random number naming this run: its rooms, and every value it writes (so state written
    /// by someone else in our rooms is told apart from ours).
    var runTag: Int

    /// This run's rooms are `bench:load-RUN-1` ... `bench:load-RUN-N`: fresh for every run, so a
    /// run never writes into rooms that users, or other runs, keep.
    var roomPrefix: String { "\(kind):load-\(runTag)-" }
    /// The rooms' kind: `bench`, or a kind with `bench`'s `set` action (`bench-views10`,
    /// `bench-viewers`: per-viewer values, with `tetherd --test-kinds`).
    var kind = "bench"
    /// Subscribers join with presence (`--presence`; the kind must keep presence: `bench-presence`).
    var presence = false
    /// Publishers say a hello with a client id and number their actions (`--numbered`).
    var numbered = false
    /// Loopback source addresses the subscribers are spread over (`--source-addresses`; 0: none).
    var sourceAddresses = 0

    /// The source address of the `index`th subscriber of a shard, if they are spread.
    func sourceAddress(forSubscriber index: Int) -> String? {
        sourceAddresses > 0 ? "127.0.0.\(2 + index % sourceAddresses)" : nil
    }

    var roomNames: [String] {
        (1...rooms).map { roomPrefix + String($0) }
    }

    /// Subscriber `index` joins room `index % rooms` and runs on thread `index % threads`.
    func room(ofSubscriber index: Int) -> Int { index % rooms }

    /// Subscriber `index` connects to URL `index % urls`, publisher `index` likewise.
    func url(ofConnection index: Int) -> String { urls[index % urls.count] }

    func subscribers(inRoom room: Int) -> Int {
        clients / rooms + (room < clients % rooms ? 1 : 0)
    }

    /// The key a publisher writes in every room: one field per publisher and run.
    func fieldKey(publisher: Int) -> String { "L\(runTag)-\(publisher)" }
}
