import Foundation
import TetherContract
import TetherJSON
import TetherProtocol
import TetherTransport

/// One HTTP API request answered by a short protocol session, as a client would run it: the
/// messages it sends the hub first, then the server's messages in, at most one answer out. A
/// value type, so a table tests it; `APIExchangeConnection` runs it against a hub.
struct APIExchange {
    enum Request: Equatable {
        /// An action; `number` makes it idempotent (`Idempotency`).
        case act(room: String, action: String, args: JSON?, idempotency: Idempotency?)
        /// The room's state as the caller's viewer sees it; 304 when `ifNoneMatch` names it.
        case read(room: String, kind: String, ifNoneMatch: String?)
        /// The room's presence members.
        case members(room: String)
        /// `describe` of one kind or all.
        case describe(kind: String?)
    }

    /// How a request names its action so a repeat runs once: the protocol's client id (a hello)
    /// and `seq`. Client ids are 16 to 64 base64url characters, so names are digested.
    enum Idempotency: Equatable {
        /// `Tether-Client: NAME` and `Idempotency-Key: N` (N > 0): client `http-` and NAME's digest, number N.
        case numbered(client: String, seq: Int)
        /// An opaque `Idempotency-Key`: a client of its own, `key-` and the key's digest, number 1.
        case key(String)

        var client: String {
            switch self {
            case .numbered(let client, _): "http-" + Self.digest(client)
            case .key(let key): "key-" + Self.digest(key)
            }
        }

        private static func digest(_ text: String) -> String { String(SHA256.hex(Array(text.utf8)).prefix(32)) }

        var seq: Int {
            switch self {
            case .numbered(_, let seq): seq
            case .key: 1
            }
        }
    }

    static let joinID = 1
    static let requestID = 2

    let request: Request
    let token: String?
    private(set) var answered = false

    init(_ request: Request, token: String?) {
        self.request = request
        self.token = token
    }

    /// What the session sends first, in this order.
    var opening: [ClientMessage] {
        switch request {
        case .act(let room, let action, let args, let idempotency):
            var messages: [ClientMessage] = []
            if let idempotency { messages.append(.hello(client: idempotency.client)) }
            // The join checks the token (an action needs it joined) and nothing else: no presence.
            messages.append(.join(room: room, id: Self.joinID, token: token))
            messages.append(.action(room: room, name: action, args: args, id: Self.requestID, seq: idempotency?.seq))
            return messages
        case .read(let room, _, _):
            return [.join(room: room, id: Self.joinID, token: token)]
        case .members(let room):
            return [.join(room: room, id: Self.joinID, token: token, watchPresence: true)]
        case .describe(let kind):
            return [.describe(kind: kind, id: Self.requestID)]
        }
    }

    /// A message from the server: the answer, when this one decides it.
    mutating func received(_ message: JSON) -> HTTPResponse? {
        guard !answered, case .object(var fields) = message, let type = fields["type"]?.stringValue else { return nil }
        let answer: HTTPResponse?
        switch (type, request) {
        case ("error", .act) where fields["code"] == "room_deleted" && fields["id"] == nil:
            // The joined room was deleted meanwhile: the action's own answer (from the new room) follows.
            answer = nil
        case ("error", _):
            answer = APIError.response(Self.error(fields))
        case ("ack", .act(let room, let action, _, _)) where fields["id"]?.intValue == Self.requestID:
            var body: [String: JSON] = ["room": .string(room), "action": .string(action)]
            body["version"] = fields["version"] ?? .null
            answer = APIError.json(200, .object(body))
        case ("snapshot", .read(let room, let kind, let ifNoneMatch)):
            let epoch = fields["epoch"]?.stringValue ?? "", version = fields["version"]?.intValue ?? 0
            let tag = Self.entityTag(epoch: epoch, version: version)
            // Viewers of one room may see different states: the answer depends on the token.
            var headers = ["ETag": tag, "Vary": "Authorization"]
            if let ifNoneMatch, Self.matches(ifNoneMatch, tag) {
                headers["Cache-Control"] = "no-cache"
                answer = HTTPResponse(status: 304, body: [], headers: headers)
            } else {
                let body: JSON = ["room": .string(room), "kind": .string(kind), "epoch": .string(epoch), "version": .int(version),
                                  "state": fields["state"] ?? .null]
                var response = APIError.json(200, body, headers: headers)
                response.headers["Cache-Control"] = "no-cache"
                answer = response
            }
        case ("presence", .members(let room)):
            var members: [JSON] = []
            if case .object(let listed)? = fields["members"] {
                for (id, member) in listed.sorted(by: { $0.key < $1.key }) {
                    members.append(["id": .string(id), "user": member["user"] ?? .null, "data": member["data"] ?? .object([:])])
                }
            }
            answer = APIError.json(200, ["room": .string(room), "version": fields["version"] ?? .int(0), "members": .array(members)])
        case ("description", .describe):
            fields["type"] = nil
            fields["id"] = nil
            answer = APIError.json(200, .object(fields))
        default:
            answer = nil
        }
        if answer != nil { answered = true }
        return answer
    }

    /// No answer in time: whether an action ran is unknown; sending it again with its key is safe.
    mutating func timedOut(after seconds: Int) -> HTTPResponse? {
        guard !answered else { return nil }
        answered = true
        let room: String? = switch request {
        case .act(let room, _, _, _), .read(let room, _, _), .members(let room): room
        case .describe: nil
        }
        let applied: ProtocolError.Applied = if case .act = request { .unknown } else { .no }
        let error = ProtocolError(.unavailable, "no answer within \(seconds) s (--http-action-timeout)", room: room, applied: applied)
        return APIError.response(error, status: 504)
    }

    /// The connection ended before an answer (server shutting down).
    mutating func closed() -> HTTPResponse? {
        guard !answered else { return nil }
        answered = true
        let applied: ProtocolError.Applied = if case .act = request { .unknown } else { .no }
        return APIError.response(ProtocolError(.unavailable, "the server closed the session", applied: applied))
    }

    static func entityTag(epoch: String, version: Int) -> String { "\"\(epoch).\(version)\"" }

    /// `If-None-Match`: a list of tags, weak or strong, or `*`.
    static func matches(_ header: String, _ tag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let trimmed = candidate.trimmingCharacters(in: .whitespaces)
            return trimmed == "*" || trimmed == tag || trimmed == "W/" + tag
        }
    }

    static func error(_ fields: [String: JSON]) -> ProtocolError {
        let code = fields["code"]?.stringValue.flatMap(ErrorCode.init(rawValue:)) ?? .internal
        return ProtocolError(code, fields["message"]?.stringValue ?? "", room: fields["room"]?.stringValue,
                             applied: .init(json: fields["applied"]), reason: fields["reason"]?.stringValue)
    }
}
