import Foundation

/// A webhook endpoint's signing secret, as Standard Webhooks writes it: `whsec_` and the key
/// in base64 (24 to 64 bytes, the specification's bounds).
public struct WebhookSecret: Sendable, Equatable {
    public let key: [UInt8]

    public enum Problem: Error, Equatable, CustomStringConvertible {
        case notASecret, badLength(Int)
        public var description: String {
            switch self {
            case .notASecret: "a webhook secret is \"whsec_\" followed by base64"
            case .badLength(let count): "a webhook secret holds 24 to 64 bytes, not \(count)"
            }
        }
    }

    public init(_ text: String) throws(Problem) {
        guard text.hasPrefix("whsec_"), let key = Data(base64Encoded: String(text.dropFirst(6))) else { throw .notASecret }
        guard (24...64).contains(key.count) else { throw .badLength(key.count) }
        self.key = Array(key)
    }

    /// A new random secret of 32 bytes (the system's generator: getrandom on Linux).
    public static func generate() -> WebhookSecret {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return try! WebhookSecret("whsec_" + Data(bytes).base64EncodedString())  // 32 bytes: valid by construction
    }

    public var text: String { "whsec_" + Data(key).base64EncodedString() }
}

/// Standard Webhooks (1.0.0) signing: each delivery carries `webhook-id` (the same for every
/// attempt of one event, so receivers can drop duplicates), `webhook-timestamp` (the attempt's
/// time, Unix seconds) and `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of
/// `id.timestamp.body` under the endpoint's secret. Several space-separated signatures let a
/// receiver accept the old and the new secret while one is rotated.
public enum WebhookSignature {
    /// The three headers for one attempt of `body`, signed with each of `secrets` (the current
    /// first; more while rotating).
    public static func headers(id: String, timestamp: Int, body: [UInt8], secrets: [WebhookSecret]) -> [(name: String, value: String)] {
        let signatures = secrets.map { sign(id: id, timestamp: timestamp, body: body, secret: $0) }
        return [("webhook-id", id), ("webhook-timestamp", String(timestamp)), ("webhook-signature", signatures.joined(separator: " "))]
    }

    /// `v1,` and the signature of `id.timestamp.body`.
    public static func sign(id: String, timestamp: Int, body: [UInt8], secret: WebhookSecret) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        return "v1," + Data(HMACSHA256.mac(signed, key: secret.key)).base64EncodedString()
    }
}
