/// What one run does, fixed before any connection opens. Shared read-only by every thread.
struct LoadConfiguration: Sendable {
    var url: String
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
    /// Tags this run's values, so state left by an earlier run (or another tether-load) in the
    /// same room is told apart from ours.
    var runTag: Int

    /// `bench` for one room, else `bench:1` ... `bench:N`.
    var roomNames: [String] {
        rooms == 1 ? ["bench"] : (1...rooms).map { "bench:\($0)" }
    }

    /// Subscriber `index` joins room `index % rooms` and runs on thread `index % threads`.
    func room(ofSubscriber index: Int) -> Int { index % rooms }

    func subscribers(inRoom room: Int) -> Int {
        clients / rooms + (room < clients % rooms ? 1 : 0)
    }

    /// The key a publisher writes in every room: one field per publisher and run.
    func fieldKey(publisher: Int) -> String { "L\(runTag)-\(publisher)" }
}
