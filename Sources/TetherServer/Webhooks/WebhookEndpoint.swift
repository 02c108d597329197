import Foundation
import TetherJSON

/// What a room can tell the rest of a system.
public enum WebhookEventType: String, Sendable, CaseIterable, Hashable {
    case roomCreated = "room.created"
    case roomDeleted = "room.deleted"
    case roomExpired = "room.expired"
    case memberJoined = "member.joined"
    case memberLeft = "member.left"
    case actionApplied = "action.applied"
}

/// One receiver of webhooks, from the config file's `webhooks:` list (docs/WEBHOOKS.md).
public struct WebhookEndpoint: Sendable, Equatable {
    /// `[a-z0-9-]+`: the endpoint's id in metrics, `GET /webhooks` and `tether webhooks`.
    public var name: String
    public var url: URL
    /// The current secret first; a second one while rotating (both sign).
    public var secrets: [WebhookSecret]
    public var events: Set<WebhookEventType>
    /// Room patterns as in tokens: a name, or a prefix ending in `*`.
    public var rooms: [String]
    /// Include action arguments (for kinds that opt in as well).
    public var arguments: Bool
    /// One attempt's limit.
    public var timeout: Duration
    /// How long an event is retried before it is dead-lettered.
    public var retryFor: Duration

    /// Whether `type` in `room` goes to this endpoint.
    public func wants(_ type: WebhookEventType, room: String) -> Bool {
        events.contains(type) && rooms.contains { $0.hasSuffix("*") ? room.hasPrefix($0.dropLast()) : room == $0 }
    }

    /// The endpoints of a config file's `webhooks:` value (a list of mappings, handed over as JSON).
    /// Secret files are read here, so a missing or malformed one is an error at start or reload.
    public static func parse(_ list: JSON) throws(WebhookConfigurationError) -> [WebhookEndpoint] {
        guard case .array(let items) = list else { throw .invalid("webhooks: expected a list of endpoints") }
        var endpoints: [WebhookEndpoint] = []
        for (index, item) in items.enumerated() {
            let endpoint = try parse(item, at: index)
            guard !endpoints.contains(where: { $0.name == endpoint.name }) else { throw .invalid("webhooks: the name \(endpoint.name) is used twice") }
            endpoints.append(endpoint)
        }
        return endpoints
    }

    static let known: Set<String> = ["name", "url", "secret-file", "events", "rooms", "arguments", "timeout", "retry-for", "allow-insecure"]

    private static func parse(_ item: JSON, at index: Int) throws(WebhookConfigurationError) -> WebhookEndpoint {
        guard case .object(let fields) = item else { throw .invalid("webhooks[\(index)]: expected a mapping") }
        let label = fields["name"]?.stringValue.map { "webhook \($0)" } ?? "webhooks[\(index)]"
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalid("\(label): unknown key \(unknown) (known: \(known.sorted().joined(separator: ", ")))")
        }
        guard let name = fields["name"]?.stringValue, !name.isEmpty,
              name.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }) else {
            throw .invalid("\(label): name is required, of a-z, 0-9 and -")
        }
        guard let text = fields["url"]?.stringValue, let url = URL(string: text), let scheme = url.scheme, let host = url.host,
              scheme == "https" || scheme == "http" else {
            throw .invalid("\(label): url must be an http(s) URL")
        }
        let insecure = fields["allow-insecure"]?.boolValue ?? false
        guard scheme == "https" || insecure || ConfigurationLoader.isLoopback(host) else {
            throw .invalid("\(label): \(text) is not https: a receiver beyond this machine needs https, or allow-insecure: true")
        }
        guard let secretFile = fields["secret-file"]?.stringValue else { throw .invalid("\(label): secret-file is required") }
        let secrets = try readSecrets(secretFile, label: label)
        let names = fields["events"]?.arrayValue?.compactMap(\.stringValue) ?? WebhookEventType.allCases.map(\.rawValue)
        var events: Set<WebhookEventType> = []
        for event in names {
            guard let type = WebhookEventType(rawValue: event) else {
                throw .invalid("\(label): no event \(event) (events: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            events.insert(type)
        }
        let rooms = fields["rooms"]?.arrayValue?.compactMap(\.stringValue) ?? ["*"]
        return WebhookEndpoint(name: name, url: url, secrets: secrets, events: events, rooms: rooms,
                               arguments: fields["arguments"]?.boolValue ?? false,
                               timeout: try seconds(fields["timeout"], default: 15, label: label, key: "timeout"),
                               retryFor: try seconds(fields["retry-for"], default: 86_400, label: label, key: "retry-for"))
    }

    /// One or two lines of `whsec_...`.
    private static func readSecrets(_ path: String, label: String) throws(WebhookConfigurationError) -> [WebhookSecret] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw .invalid("\(label): cannot read secret-file \(path)") }
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard (1...2).contains(lines.count) else { throw .invalid("\(label): \(path) holds one secret, or two while rotating") }
        var secrets: [WebhookSecret] = []
        for line in lines {
            do {
                secrets.append(try WebhookSecret(line))
            } catch {
                throw .invalid("\(label): \(path): \(error)")
            }
        }
        return secrets
    }

    /// A number of seconds, or a text like `15s`, `10m`, `24h`.
    private static func seconds(_ value: JSON?, default fallback: Int, label: String, key: String) throws(WebhookConfigurationError) -> Duration {
        guard let value else { return .seconds(fallback) }
        if let number = value.intValue, number > 0 { return .seconds(number) }
        if let text = value.stringValue, let unit = text.last, let number = Int(text.dropLast()), number > 0,
           let scale = ["s": 1, "m": 60, "h": 3_600, "d": 86_400][String(unit)] {
            return .seconds(number * scale)
        }
        throw .invalid("\(label): \(key) is a number of seconds, or like 15s, 10m, 24h")
    }
}

public enum WebhookConfigurationError: Error, Equatable, CustomStringConvertible {
    case invalid(String)
    public var description: String {
        switch self {
        case .invalid(let message): message
        }
    }
}
