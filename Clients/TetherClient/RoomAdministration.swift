import Foundation
import Logging
import TetherJSON
import TetherTransport

/// The daemon's room administration, on its HTTP side: `GET /rooms` lists every room (in memory
/// and stored), `DELETE /rooms/NAME` deletes one. Sent to the first server of `options.url`
/// (`ws://` as `http://`, `wss://` as `https://`, with the options' TLS trust), with the options'
/// token as `Authorization: Bearer` (servers with token secrets need one with the admin claim).
public struct RoomAdministration: Sendable {
    public let options: ClientOptions
    public var timeout: Duration

    /// What the server answered: its HTTP status and its JSON body (nil when the body is not JSON).
    public struct Answer: Sendable {
        public var status: Int
        public var body: [UInt8]
        public var json: JSON? { try? JSONParser().parse(body) }
        /// The `error` member of a refusal, or the status.
        public var errorMessage: String { json?["error"]?.stringValue ?? json?["message"]?.stringValue ?? "HTTP \(status)" }
    }

    public init(options: ClientOptions, timeout: Duration = .seconds(10)) {
        self.options = options
        self.timeout = timeout
    }

    /// `GET /rooms`.
    public func list() async throws -> Answer {
        try await request("GET", path: "/rooms")
    }

    /// `DELETE /rooms/NAME`, the name percent-encoded.
    public func delete(room: String) async throws -> Answer {
        try await request("DELETE", path: "/rooms/" + Self.encoded(room))
    }

    /// `GET /rooms/NAME/history?QUERY`: who made each kept version, newest first.
    public func history(room: String, query: [(String, String)]) async throws -> Answer {
        let pairs = query.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.1)" }
        return try await request("GET", path: "/rooms/" + Self.encoded(room) + "/history" + (pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")))
    }

    /// `GET /rooms/NAME/state?at=VERSION`: the room's published state at an earlier version.
    public func state(room: String, at version: Int) async throws -> Answer {
        try await request("GET", path: "/rooms/" + Self.encoded(room) + "/state?at=\(version)")
    }

    private static func encoded(_ room: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/%")
        return room.addingPercentEncoding(withAllowedCharacters: allowed) ?? room
    }

    /// `GET /rooms/NAME/export?from=V[&to=W]`: the steps between two versions, to replay.
    public func export(room: String, from: Int, to: Int?) async throws -> Answer {
        try await request("GET", path: "/rooms/" + Self.encoded(room) + "/export?from=\(from)" + (to.map { "&to=\($0)" } ?? ""))
    }

    /// `POST /rooms/NAME/fork?at=V&to=NEW`: a new room from the state at version V.
    public func fork(room: String, at version: Int, into target: String) async throws -> Answer {
        let to = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target
        return try await request("POST", path: "/rooms/" + Self.encoded(room) + "/fork?at=\(version)&to=" + to)
    }

    /// `GET /webhooks`: the webhook endpoints with their queues.
    public func webhooks() async throws -> Answer {
        try await request("GET", path: "/webhooks")
    }

    /// `POST /webhooks/NAME/retry` or `/test`.
    public func webhook(_ name: String, _ verb: String) async throws -> Answer {
        try await request("POST", path: "/webhooks/\(name)/\(verb)")
    }

    private func request(_ method: String, path: String) async throws -> Answer {
        let client: WebSocketClient
        do {
            client = try SharedTransport.client(trust: options.trust, maxMessageBytes: options.maxMessageBytes,
                                                logger: Logger(label: "tether.admin"))
        } catch {
            throw TetherClientError.notConnected("\(error)")
        }
        do {
            let response = try await client.request(method, path: path, on: options.urls[0],
                                                    authorization: options.token.map { "Bearer \($0)" }, timeout: timeout)
            return Answer(status: response.status, body: response.body)
        } catch .timedOut {
            throw TetherClientError.timedOut
        } catch {
            throw TetherClientError.requestFailed(error.description)
        }
    }
}
