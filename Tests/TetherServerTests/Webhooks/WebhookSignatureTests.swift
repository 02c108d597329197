import Testing
@testable import TetherServer

@Suite("Webhooks: Standard Webhooks signatures")
struct WebhookSignatureTests {
    /// The specification's own example (standard-webhooks, "Verifying webhooks"), which the
    /// `standardwebhooks` Python package signs the same way.
    @Test func theSpecificationsExampleSignsAsItSays() throws {
        let secret = try WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let signature = WebhookSignature.sign(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                                              body: Array(#"{"test": 2432232314}"#.utf8), secret: secret)
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func whileRotatingEverySecretSigns() throws {
        let old = try WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), new = WebhookSecret.generate()
        let headers = WebhookSignature.headers(id: "evt_1", timestamp: 7, body: Array("{}".utf8), secrets: [new, old])
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        let signatures = headers[2].value.split(separator: " ").map(String.init)
        #expect(signatures == [WebhookSignature.sign(id: "evt_1", timestamp: 7, body: Array("{}".utf8), secret: new),
                               WebhookSignature.sign(id: "evt_1", timestamp: 7, body: Array("{}".utf8), secret: old)])
        #expect(signatures[0] != signatures[1])
    }

    @Test(arguments: [
        ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", WebhookSecret.Problem.notASecret),
        ("whsec_not base64!", .notASecret),
        ("whsec_c2hvcnQ=", .badLength(5)),
    ])
    func aSecretThatIsNotOneIsRefusedWithWhy(_ text: String, _ problem: WebhookSecret.Problem) {
        #expect(throws: problem) { try WebhookSecret(text) }
    }

    @Test func aGeneratedSecretReadsBack() throws {
        let secret = WebhookSecret.generate()
        #expect(secret.key.count == 32)
        #expect(try WebhookSecret(secret.text) == secret)
    }
}
