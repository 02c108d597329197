import Foundation
import Testing
import TetherJSON
import TetherServer
import TetherTestSupport

/// Our Standard Webhooks signatures as a real receiver checks them: the `standardwebhooks`
/// Python package (PyPI, installed by Scripts/setup.sh into .tools/py) verifies random
/// deliveries, accepts a rotated secret's pair, and refuses a body changed on the way.
@Suite("Webhooks: signatures verified by the standardwebhooks package")
struct WebhookSignatureInteropTests {
    static let script = Repository.root.appendingPathComponent("Tests/Interop/verify_webhooks.py")

    /// Each delivery's verdict from the Python library, in order.
    static func verify(_ deliveries: [JSON]) throws -> [JSON] {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = [script.path]
        python.environment = ["PYTHONPATH": Repository.root.appendingPathComponent(".tools/py").path]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        python.standardInput = input
        python.standardOutput = output
        python.standardError = errors
        try python.run()
        input.fileHandleForWriting.write(Data(deliveries.flatMap { $0.encoded() + Array("\n".utf8) }))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(python.terminationStatus == 0, "verify_webhooks.py: \(stderr) (run Scripts/setup.sh: it installs standardwebhooks into .tools/py)")
        return try text.split(separator: "\n").map { try JSON(parsing: String($0)) }
    }

    static func delivery(_ headers: [(name: String, value: String)], body: String, secret: WebhookSecret) -> JSON {
        ["secret": .string(secret.text), "body": .string(body),
         "headers": .object(Dictionary(uniqueKeysWithValues: headers.map { ($0.name, JSON.string($0.value)) }))]
    }

    @Test func randomDeliveriesVerifyAndAChangedBodyDoesNot() throws {
        let now = Int(Date().timeIntervalSince1970)
        var deliveries: [JSON] = []
        var expected: [Bool] = []
        for index in 0..<20 {
            let secret = WebhookSecret.generate()
            let body = #"{"type":"action.applied","timestamp":"2026-11-28T17:00:00Z","data":{"room":"todo:\#(index)","version":\#(index * 7)}}"#
            let headers = WebhookSignature.headers(id: "evt_\(UUID().uuidString)", timestamp: now, body: Array(body.utf8), secrets: [secret])
            deliveries.append(Self.delivery(headers, body: body, secret: secret))
            expected.append(true)
            // The same delivery with one byte of the body changed on the way.
            deliveries.append(Self.delivery(headers, body: body.replacingOccurrences(of: "todo", with: "tado"), secret: secret))
            expected.append(false)
        }
        // While rotating, a receiver that knows only the old secret still accepts.
        let old = WebhookSecret.generate(), new = WebhookSecret.generate()
        let rotated = WebhookSignature.headers(id: "evt_rotated", timestamp: now, body: Array("{}".utf8), secrets: [new, old])
        deliveries.append(Self.delivery(rotated, body: "{}", secret: old))
        expected.append(true)
        let verdicts = try Self.verify(deliveries)
        #expect(verdicts.count == deliveries.count)
        for (index, verdict) in verdicts.enumerated() where verdict["ok"]?.boolValue != expected[index] {
            Issue.record("delivery \(index): expected \(expected[index] ? "accepted" : "refused"), got \(verdict)")
        }
    }
}
