import TetherJSON
import TetherProtocol

/// One in-memory client of a `TestServer`: sends requests, reads what the server wrote, and
/// keeps a mirror of every room it receives (applying patches only when `from` matches, as a
/// real client does), so tests can compare it with the room's state.
public final class TestClient {
    public let server: TestServer
    public let connection: TestConnection
    private var inbox: [ServerMessage] = []
    /// Mirrored state, epoch and version of each room a snapshot arrived for.
    public private(set) var mirrors: [String: (epoch: String, version: Int, state: JSON)] = [:]
    /// Patches that did not continue the mirror (a gap): must stay empty on a correct server.
    public private(set) var gaps: [String] = []

    init(server: TestServer, connection: TestConnection) {
        self.server = server
        self.connection = connection
    }

    /// Sends a request and runs the server until idle.
    public func send(_ message: ClientMessage) {
        server.receive(message.encoded(), on: connection)
    }

    /// Sends raw text (bad input tests).
    public func send(text: String) {
        server.receive(Array(text.utf8), on: connection)
    }

    public func sendBinary() {
        server.receiveBinary(on: connection)
    }

    /// The client goes away without a close frame.
    public func disconnect() {
        server.disconnect(connection)
    }

    /// Everything received since the last call, decoded, oldest first.
    public func receiveAll() -> [ServerMessage] {
        collect()
        defer { inbox.removeAll() }
        return inbox
    }

    /// The oldest message not yet taken, or nil.
    public func receive() -> ServerMessage? {
        collect()
        return inbox.isEmpty ? nil : inbox.removeFirst()
    }

    /// Drops what was received so far.
    public func discardReceived() {
        collect()
        inbox.removeAll()
    }

    /// The mirror of `room`, if a snapshot arrived.
    public func state(of room: String) -> JSON? { mirrors[room]?.state }
    public func version(of room: String) -> Int? { mirrors[room]?.version }
    /// Each room's presence as mirrored from `presence` and `presence_patch` (gaps are recorded).
    public private(set) var presence: [String: (version: Int, members: JSON)] = [:]
    /// The presence members of `room`: member id → `{"user", "data"}`.
    public func members(of room: String) -> JSON? { presence[room]?.members }

    private func collect() {
        for frame in connection.takeSent() {
            guard let message = try? ServerMessage.decode(frame) else {
                gaps.append("undecodable frame: \(String(decoding: frame, as: UTF8.self))")
                continue
            }
            mirror(message)
            inbox.append(message)
        }
    }

    private func mirror(_ message: ServerMessage) {
        switch message {
        case .snapshot(let room, let epoch, let version, let state):
            mirrors[room] = (epoch, version, state)
        case .patch(let room, let epoch, let from, let version, let operations):
            guard var mirror = mirrors[room] else { return }
            guard mirror.epoch == epoch, mirror.version == from else {
                gaps.append("\(room): patch \(from)->\(version) of \(epoch) after \(mirror.version) of \(mirror.epoch)")
                return
            }
            do {
                try mirror.state.apply(operations)
            } catch {
                gaps.append("\(room): patch \(from)->\(version) does not apply: \(error)")
                return
            }
            mirror.version = version
            mirrors[room] = mirror
        case .presence(let room, let version, let members):
            presence[room] = (version, members)
        case .presencePatch(let room, let from, let version, let operations):
            guard var mirror = presence[room], mirror.version == from else {
                gaps.append("\(room): presence patch \(from)->\(version) after \(presence[room].map { String($0.version) } ?? "no snapshot")")
                return
            }
            do {
                try mirror.members.apply(operations)
            } catch {
                gaps.append("\(room): presence patch \(from)->\(version) does not apply: \(error)")
                return
            }
            mirror.version = version
            presence[room] = mirror
        default:
            break
        }
    }
}

extension ServerMessage {
    /// The message's `type` member, for short assertions.
    public var type: String {
        switch self {
        case .hello: return "hello"
        case .snapshot: return "snapshot"
        case .patch: return "patch"
        case .presence: return "presence"
        case .presencePatch: return "presence_patch"
        case .ack: return "ack"
        case .description: return "description"
        case .error: return "error"
        }
    }

    /// The error, when this is one.
    public var error: ProtocolError? {
        if case .error(let error) = self { return error } else { return nil }
    }
}
