import Histogram
import Logging
import TetherProtocol
import TetherJSON
import TetherTransport

/// What the publisher shard tells the main thread.
struct PublisherReport: Sendable {
    /// When the figures were taken (monotonic ns, on the loop thread).
    var at = 0
    var counters = PublisherCounters()
    /// Action round trip (send to ack), in µs, over the measurement window.
    var ackTimes = makeLatencyHistogram()
    /// Sequence numbers sent: `sent[publisher * rooms + room]`.
    var sent: [Int] = []
    var samples: [String] = []
}

/// The publishers, on their own WebSocketClient (thread), so that pacing is not delayed by the
/// subscribers' receive work. Actions are built straight into a reused byte buffer:
/// `{"type":"action","room":R,"name":"set","args":{"key":K,"value":{"i":P,"r":RUN,"s":SEQ,"t":NS,"z":PAD}},"id":N}`.
/// The value's members sort before the padding (the server writes object keys sorted), so the
/// subscribers' scanner finds them before the long string.
final class PublisherShard: @unchecked Sendable {
    let configuration: LoadConfiguration
    let client: WebSocketClient
    private var publishers: [Publisher] = []
    private var counters = PublisherCounters()
    private var ackTimes = makeLatencyHistogram()
    private var measuring = false
    private var sent: [Int]
    private let subscribersPerRoom: [Int]
    private let encodedRooms: [[UInt8]]
    private let roomNames: [String]
    private let encodedKeys: [[UInt8]]
    private let padding: [UInt8]
    private var frame: [UInt8] = []
    private var samples: [String] = []
    private var stopping = false

    init(configuration: LoadConfiguration, logger: Logger) {
        self.configuration = configuration
        roomNames = configuration.roomNames
        encodedRooms = roomNames.map(encodedStringContents)
        encodedKeys = (0..<configuration.publishers).map { encodedStringContents(configuration.fieldKey(publisher: $0)) }
        subscribersPerRoom = (0..<configuration.rooms).map(configuration.subscribers(inRoom:))
        padding = Array(repeating: UInt8(ascii: "x"), count: configuration.payloadBytes)
        sent = Array(repeating: 0, count: configuration.publishers * configuration.rooms)
        frame.reserveCapacity(256 + configuration.payloadBytes)
        var transport = WebSocketClientConfiguration()
        transport.pingInterval = nil
        transport.idleTimeout = nil
        transport.connectTimeout = .seconds(Int64(max(1, configuration.connectTimeout.rounded(.up))))
        transport.maxConnections = configuration.publishers + 16
        transport.validateUTF8 = false
        transport.trust = configuration.trust
        transport.compression = configuration.compression
        client = WebSocketClient(configuration: transport, logger: logger)
    }

    // MARK: Commands (loop thread)

    func connectAll() {
        for index in 0..<configuration.publishers {
            let publisher = Publisher(shard: self, index: index)
            publishers.append(publisher)
            do {
                publisher.connection = try client.connect(url: configuration.url(ofConnection: index), subprotocol: TetherProtocol.subprotocol, delegate: publisher)
            } catch {
                connectFailed(publisher, reason: "\(error)")
            }
        }
    }

    /// Sends actions number `first ..< first + count` of the run. Action k goes to room
    /// `k % rooms`, from publisher `(k / rooms) % publishers`: every room gets the same rate, and
    /// each (publisher, room) pair numbers its actions 0, 1, 2... in sending order.
    func send(first: Int, count: Int) {
        let rooms = configuration.rooms
        for k in first..<(first + count) {
            let room = k % rooms
            let publisher = publishers[(k / rooms) % publishers.count]
            guard publisher.ready, let connection = publisher.connection else {
                counters.protocolErrors += 1
                sample("publisher \(publisher.index) is not connected: action dropped")
                continue
            }
            let slot = publisher.index * rooms + room
            let sequence = sent[slot]
            sent[slot] += 1
            let id = publisher.nextID
            publisher.nextID += 1
            let now = monotonicNanos()
            buildAction(room: room, publisher: publisher.index, sequence: sequence, sentAt: now, id: id)
            publisher.outstanding[id] = (room, now)
            counters.actionsSent += 1
            counters.deliveriesOffered += subscribersPerRoom[room]
            if publisher.queue.isEmpty && !connection.isChoked {
                frame.withUnsafeBytes { _ = connection.sendText($0) }
            } else {
                counters.queuedWhenChoked += 1
                publisher.queue.append(frame)
                if publisher.queue.count == 1 { connection.requestWritable() }
            }
        }
    }

    func report(measure: Bool? = nil) -> PublisherReport {
        if let measure {
            if measure { ackTimes.reset() }
            measuring = measure
        }
        return PublisherReport(at: monotonicNanos(), counters: counters, ackTimes: ackTimes, sent: sent, samples: samples)
    }

    /// The counters alone (cheap: for polling).
    var currentCounters: PublisherCounters { counters }

    func stop() {
        stopping = true
    }

    // MARK: Events

    func connectFailed(_ publisher: Publisher, reason: String) {
        counters.connectFailures += 1
        sample("publisher \(publisher.index): connect failed: \(reason)")
    }

    func closed(_ publisher: Publisher, code: UInt16?) {
        publisher.connection = nil
        if publisher.ready { counters.ready -= 1 }
        publisher.ready = false
        if !stopping {
            counters.disconnects += 1
            sample("publisher \(publisher.index) closed by the server (code \(code.map(String.init) ?? "none"))")
        }
    }

    func received(_ payload: UnsafeRawBufferPointer, from publisher: Publisher) {
        let message: ServerMessage
        do {
            message = try ServerMessage.decode(payload)
        } catch {
            counters.protocolErrors += 1
            sample("publisher: undecodable frame: \(error.message)")
            return
        }
        switch message {
        case .hello:
            if !publisher.ready {
                if configuration.numbered, let connection = publisher.connection {
                    // 22 characters of the run tag and the publisher's index: a client id per publisher.
                    let client = Array("load-\(configuration.runTag)-\(publisher.index)-numbered-client".utf8.prefix(64))
                    let hello = ClientMessage.hello(client: String(decoding: client, as: UTF8.self)).encoded()
                    hello.withUnsafeBytes { _ = connection.sendText($0) }
                }
                publisher.ready = true
                counters.ready += 1
            }
        case .ack(let id, let room, _):
            guard let pending = publisher.outstanding.removeValue(forKey: id) else {
                counters.ackMismatches += 1
                sample("ack for unknown action id \(id)")
                return
            }
            counters.acks += 1
            if room != roomNames[pending.room] {
                counters.ackMismatches += 1
                sample("ack for action \(id) names room \(room), sent to \(roomNames[pending.room])")
            }
            if measuring { recordMicroseconds(&ackTimes, nanoseconds: monotonicNanos() - pending.sentAt) }
        case .error(let error):
            counters.errors += 1
            if let id = error.id { publisher.outstanding[id] = nil }
            sample("publisher got error \(error.code.rawValue): \(error.message)")
        case .patch, .snapshot, .description, .presence, .presencePatch:
            counters.protocolErrors += 1
            sample("a publisher that joined nothing got a \(message)")
        }
    }

    private func sample(_ line: String) {
        if samples.count < 8 { samples.append(line) }
    }

    // MARK: Encoding

    private func buildAction(room: Int, publisher: Int, sequence: Int, sentAt: Int, id: Int) {
        frame.removeAll(keepingCapacity: true)
        append(#"{"type":"action","room":""#)
        frame.append(contentsOf: encodedRooms[room])
        append(#"","name":"set","args":{"key":""#)
        frame.append(contentsOf: encodedKeys[publisher])
        append(#"","value":{"i":"#)
        appendInt(publisher)
        append(#","r":"#)
        appendInt(configuration.runTag)
        append(#","s":"#)
        appendInt(sequence)
        append(#","t":"#)
        appendInt(sentAt)
        append(#","z":""#)
        frame.append(contentsOf: padding)
        append(#""}},"id":"#)
        appendInt(id)
        if configuration.numbered {
            append(#","seq":"#)  // ids grow per publisher: they serve as its action numbers
            appendInt(id)
        }
        frame.append(Byte.closeBrace)
    }

    private func append(_ literal: StaticString) {
        literal.withUTF8Buffer { frame.append(contentsOf: $0) }
    }

    private func appendInt(_ value: Int) {
        var v = value
        if v < 0 {
            frame.append(Byte.minus)
            v = -v
        }
        if v == 0 {
            frame.append(Byte.zero)
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // up to 24 digits, on the stack
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while v > 0 {
                buffer[count] = Byte.zero + UInt8(v % 10)
                v /= 10
                count += 1
            }
            for i in stride(from: count - 1, through: 0, by: -1) { frame.append(buffer[i]) }
        }
    }
}
