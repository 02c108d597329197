import Foundation
import TetherJSON
import TetherServer
import TetherTestSupport

/// Tests/HTTP/webhook_receiver.py as a process: a receiver that verifies each delivery with the
/// `standardwebhooks` package and keeps the first copy of each event id.
final class WebhookReceiver: @unchecked Sendable {
    static let script = Repository.root.appendingPathComponent("Tests/HTTP/webhook_receiver.py")
    let secret = WebhookSecret.generate()
    let secretFile: String
    private(set) var process = Process()
    private(set) var port = 0

    init() throws {
        secretFile = Daemon.temporaryDirectory() + "/receiver.whsec"
        try (secret.text + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
        try start(port: 0)
    }

    /// Starts (again) on `port` (0: any).
    func start(port: Int) throws {
        (process, self.port) = try PythonCounterpart.start(Self.script, [secretFile] + (port == 0 ? [] : ["--port", String(port)]),
                                                           needs: "standardwebhooks")
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    var url: String { "http://127.0.0.1:\(port)/hook" }

    /// A config file for tetherd with this receiver as endpoint `NAME`.
    func configFile(name: String = "test", events: [String]? = nil, extra: String = "") throws -> String {
        let path = Daemon.temporaryDirectory() + "/tetherd.yaml"
        var text = "webhooks:\n  - name: \(name)\n    url: \(url)\n    secret-file: \(secretFile)\n"
        if let events { text += "    events: [\(events.joined(separator: ", "))]\n" }
        text += extra
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func control(_ mode: JSON) throws {
        let body = String(decoding: mode.encoded(), as: UTF8.self)
        _ = try RawSocket(port: port).http("POST /control HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
    }

    /// What it got: the first copy of each event, duplicates, deliveries that did not verify.
    func received() throws -> (events: [JSON], duplicates: Int, bad: Int, attempts: Int) {
        let answer = try RawSocket(port: port).httpGET("/received")
        let json = try JSON(parsing: String(decoding: answer.body, as: UTF8.self))
        return (json["events"]?.arrayValue ?? [], json["duplicates"]?.intValue ?? 0, json["bad"]?.intValue ?? 0, json["attempts"]?.intValue ?? 0)
    }

    /// The versions of the `action.applied` events of `room` received, sorted.
    func appliedVersions(room: String) throws -> [Int] {
        try received().events.filter { $0["type"] == "action.applied" && $0["data"]?["room"] == .string(room) }
            .compactMap { $0["data"]?["version"]?.intValue }.sorted()
    }
}
