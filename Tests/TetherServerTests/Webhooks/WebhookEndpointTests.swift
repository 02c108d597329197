import Foundation
import Testing
import TetherJSON
@testable import TetherServer

@Suite("Webhooks: endpoints from the config file, events, retries")
struct WebhookEndpointTests {
    static func secretFile(_ lines: [String]) throws -> String {
        let path = NSTemporaryDirectory() + "whsec-\(UUID().uuidString)"
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func anEndpointIsReadWithItsDefaultsAndWantsWhatItNames() throws {
        let secret = WebhookSecret.generate()
        let file = try Self.secretFile([secret.text])
        let endpoints = try WebhookEndpoint.parse([["name": "orders", "url": "https://orders.example/hooks", "secret-file": .string(file),
                                                    "events": ["action.applied", "room.created"], "rooms": ["order:*"], "timeout": "30s",
                                                    "retry-for": "2h"]])
        let orders = try #require(endpoints.first)
        #expect(orders.secrets == [secret] && orders.timeout == .seconds(30) && orders.retryFor == .seconds(7_200) && !orders.arguments)
        #expect(orders.wants(.actionApplied, room: "order:42") && orders.wants(.roomCreated, room: "order:1"))
        #expect(!orders.wants(.actionApplied, room: "order") && !orders.wants(.memberJoined, room: "order:42"))
        let all = try WebhookEndpoint.parse([["name": "all", "url": "http://127.0.0.1:9/x", "secret-file": .string(file)]]).first
        #expect(all?.events == Set(WebhookEventType.allCases) && all?.wants(.roomExpired, room: "anything") == true)
    }

    @Test(arguments: [
        (["url": "https://a.example"] as [String: JSON], "name is required"),
        (["name": "Bad Name", "url": "https://a.example"], "name is required, of a-z, 0-9 and -"),
        (["name": "a", "url": "ftp://a.example"], "url must be an http(s) URL"),
        (["name": "a", "url": "http://a.example/x"], "is not https"),
        (["name": "a", "url": "https://a.example", "events": ["action.done"]], "no event action.done"),
        (["name": "a", "url": "https://a.example", "retries": 3], "unknown key retries"),
        (["name": "a", "url": "https://a.example", "timeout": "soon"], "timeout is a number of seconds"),
    ] as [([String: JSON], String)])
    func aBadEndpointIsRefusedWithItsReason(_ fields: [String: JSON], _ reason: String) throws {
        var fields = fields
        if fields["secret-file"] == nil, fields["name"] != nil { fields["secret-file"] = .string(try Self.secretFile([WebhookSecret.generate().text])) }
        #expect(throws: WebhookConfigurationError.self) { try WebhookEndpoint.parse([.object(fields)]) }
        do {
            _ = try WebhookEndpoint.parse([.object(fields)])
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }

    @Test func secretFilesHoldOneSecretOrTwoWhileRotating() throws {
        let old = WebhookSecret.generate(), new = WebhookSecret.generate()
        let two = try WebhookEndpoint.parse([["name": "a", "url": "https://a.example", "secret-file": .string(try Self.secretFile([new.text, old.text]))]])
        #expect(two.first?.secrets == [new, old])
        for lines in [[], [new.text, old.text, new.text], ["whsec_short"]] {
            let file = try Self.secretFile(lines)
            #expect(throws: WebhookConfigurationError.self) { try WebhookEndpoint.parse([["name": "a", "url": "https://a.example", "secret-file": .string(file)]]) }
        }
    }

    /// The hand-made timestamp is Foundation's ISO 8601 with milliseconds, for any instant
    /// (before 1970 and leap days included).
    @Test func timestampsAreISO8601WithMillisecondsInUTC() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        let instants = [0, 951_782_400.5, 1_795_873_206.123, -1.25, 4_102_444_799.999]
            + (0..<2_000).map { _ in Double(Int.random(in: -2_000_000_000_000...5_000_000_000_000, using: &generator)) / 1000 }
        for seconds in instants {
            #expect(WebhookEvent.timestamp(seconds) == formatter.string(from: Date(timeIntervalSince1970: seconds)), "at \(seconds)")
        }
    }

    @Test func anEventsIdIsTheSameForEveryCopyAndItsBodyIsTheSpecificationsShape() throws {
        let first = WebhookEvent.actionApplied(room: "order:42", kind: "order", epoch: "k3", version: 7, action: "markPaid",
                                               viewer: "service:payments", arguments: ["amount": 1200], at: 1_795_000_000.123)
        let again = WebhookEvent.actionApplied(room: "order:42", kind: "order", epoch: "k3", version: 7, action: "markPaid",
                                               viewer: "service:payments", arguments: nil, at: 1_795_000_099)
        let next = WebhookEvent.actionApplied(room: "order:42", kind: "order", epoch: "k3", version: 8, action: "markPaid",
                                              viewer: "service:payments", arguments: nil, at: 1_795_000_099)
        #expect(first.id == again.id && first.id != next.id)
        #expect(first.id.hasPrefix("msg_") && first.id.count == 31 && !first.id.contains("."))
        let body = try JSONParser().parse(first.body)
        #expect(body["type"] == "action.applied" && body["timestamp"] == "2026-11-18T11:06:40.123Z")
        #expect(body["data"] == ["room": "order:42", "kind": "order", "epoch": "k3", "version": 7, "action": "markPaid",
                                 "viewer": "service:payments", "args": ["amount": 1200]])
    }

    @Test(arguments: [
        (WebhookRetry.Outcome.status(204, retryAfter: nil), 1, 0.0, WebhookRetry.Decision.delivered),
        (.status(410, retryAfter: nil), 3, 10, .disable(reason: "the receiver answered 410 Gone")),
        (.status(500, retryAfter: nil), 1, 10, .retry(afterSeconds: 1, reason: "HTTP 500")),      // 0.5 × 2 s
        (.status(500, retryAfter: nil), 4, 10, .retry(afterSeconds: 8, reason: "HTTP 500")),      // 0.5 × 16 s
        (.status(500, retryAfter: nil), 30, 10, .retry(afterSeconds: 1_800, reason: "HTTP 500")), // capped at an hour
        (.status(503, retryAfter: 120), 1, 10, .retry(afterSeconds: 120, reason: "HTTP 503")),    // the receiver's wish
        (.status(302, retryAfter: nil), 1, 10, .retry(afterSeconds: 1, reason: "HTTP 302")),      // never followed
        (.failed("connection refused"), 2, 10, .retry(afterSeconds: 2, reason: "connection refused")),
        (.failed("timed out"), 9, 100, .dead(reason: "timed out, still failing after 100 s")),
    ] as [(WebhookRetry.Outcome, Int, Double, WebhookRetry.Decision)])
    func eachAttemptsOutcomeDecidesWhatFollows(_ outcome: WebhookRetry.Outcome, _ attempts: Int, _ age: Double, _ expected: WebhookRetry.Decision) {
        #expect(WebhookRetry.decide(outcome, attempts: attempts, age: age, retryFor: 100, random: 0.5) == expected)
    }

    /// Full jitter: any delay from 0 up to the attempt's ceiling, never past an hour.
    @Test func delaysStayWithinTheirCeiling() {
        for attempts in 1...40 {
            let ceiling = min(3_600, 2 * pow(2, Double(attempts - 1)))
            for random in [0, 0.25, 0.999] {
                guard case .retry(let delay, _) = WebhookRetry.decide(.failed("x"), attempts: attempts, age: 0, retryFor: 1e9, random: random) else {
                    Issue.record("attempt \(attempts) did not retry")
                    continue
                }
                #expect(delay >= 0 && delay <= ceiling && delay <= 3_600)
            }
        }
    }
}
