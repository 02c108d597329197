import Foundation
import TetherContract
import TetherJSON

/// One thing that happened in a room, as receivers get it: Standard Webhooks' body shape
/// `{"type", "timestamp", "data"}`, minified; the bytes signed are the bytes sent.
public struct WebhookEvent: Sendable, Equatable {
    public let type: WebhookEventType
    public let room: String
    /// The same for every copy of one event however often it is sent: receivers drop repeats by it.
    public let id: String
    public let body: [UInt8]

    /// `data` holds the room and what the type tells; `identity` makes the id (an epoch and
    /// version, a member's id): the same happening gives the same id.
    public init(_ type: WebhookEventType, room: String, data: [String: JSON], identity: String, at seconds: Double) {
        self.type = type
        self.room = room
        id = Self.id(type, room: room, identity: identity)
        var fields = data
        fields["room"] = .string(room)
        let body: JSON = ["type": .string(type.rawValue), "timestamp": .string(Self.timestamp(seconds)), "data": .object(fields)]
        self.body = body.encoded()
    }

    init(type: WebhookEventType, room: String, id: String, body: [UInt8]) {
        self.type = type
        self.room = room
        self.id = id
        self.body = body
    }

    /// `msg_` and 27 base64url characters of SHA-256(type, room, identity): no `.`, as the
    /// specification asks of ids.
    static func id(_ type: WebhookEventType, room: String, identity: String) -> String {
        let digest = SHA256.digest(Array("\(type.rawValue)\u{0}\(room)\u{0}\(identity)".utf8))
        let text = Data(digest).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return "msg_" + text.prefix(27)
    }

    /// RFC 3339 in UTC with milliseconds.
    static func timestamp(_ seconds: Double) -> String {
        // By hand: an ISO8601DateFormatter per event cost 4 % of the daemon's CPU at 100 actions/s
        // (ICU builds one each time), on the room's executor.
        var milliseconds = Int((seconds * 1000).rounded())
        var whole = time_t(milliseconds.quotientAndRemainder(dividingBy: 1000).quotient)
        milliseconds -= Int(whole) * 1000
        if milliseconds < 0 { milliseconds += 1000; whole -= 1 }
        var parts = tm()
        gmtime_r(&whole, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let fraction = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }
}

extension WebhookEvent {
    /// `action.applied`: the version step an action made, and who sent it.
    static func actionApplied(room: String, kind: String, epoch: String, version: Int, action: String, viewer: String,
                              arguments: JSON?, at seconds: Double) -> WebhookEvent {
        var data: [String: JSON] = ["kind": .string(kind), "epoch": .string(epoch), "version": .int(version),
                                    "action": .string(action), "viewer": .string(viewer)]
        if let arguments { data["args"] = arguments }
        return WebhookEvent(.actionApplied, room: room, data: data, identity: "\(epoch)\u{0}\(version)", at: seconds)
    }

    static func roomCreated(room: String, kind: String, epoch: String, at seconds: Double) -> WebhookEvent {
        WebhookEvent(.roomCreated, room: room, data: ["kind": .string(kind), "epoch": .string(epoch)], identity: epoch, at: seconds)
    }

    static func roomDeleted(room: String, kind: String, expired: Bool, at seconds: Double) -> WebhookEvent {
        // A room deleted twice is two rooms: the deletion's time tells them apart.
        WebhookEvent(expired ? .roomExpired : .roomDeleted, room: room, data: ["kind": .string(kind)], identity: "\(Int(seconds * 1000))", at: seconds)
    }

    static func member(joined: Bool, room: String, kind: String, member: String, viewer: String, at seconds: Double) -> WebhookEvent {
        WebhookEvent(joined ? .memberJoined : .memberLeft, room: room,
                     data: ["kind": .string(kind), "member": .string(member), "viewer": .string(viewer)], identity: member, at: seconds)
    }
}
