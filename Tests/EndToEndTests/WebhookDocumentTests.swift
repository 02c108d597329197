import Foundation
import Testing
import TetherTestSupport

/// docs/WEBHOOKS.md's "Try it" runs as written, in an empty folder: its shell blocks in one
/// shell, its Python block saved as `receiver.py`, the documented ports (9000, 8080) swapped for
/// free ones. It prints what the section shows: curl's acks and the receiver's verified events.
@Suite("End to end: the webhooks' documented example", .timeLimit(.minutes(2)))
struct WebhookDocumentTests {
    @Test func theTryItSectionPrintsWhatItShows() throws {
        let blocks = MarkdownBlocks.of(try Repository.text("docs/WEBHOOKS.md"), section: "## Try it")
        let shell = blocks.filter { $0.language == "sh" }.map(\.text)
        let python = blocks.filter { $0.language == "python" }.map(\.text)
        let shown = blocks.filter { $0.language == "text" }.map(\.text)
        try #require(shell.count == 2 && python.count == 1 && shown.count == 1, "the section's blocks: \(blocks.map(\.language))")

        let ports = try freePorts(2)
        func local(_ text: String) -> String {
            text.replacingOccurrences(of: "9000", with: String(ports[0])).replacingOccurrences(of: "8080", with: String(ports[1]))
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-webhook-doc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try local(python[0]).write(to: folder.appendingPathComponent("receiver.py"), atomically: true, encoding: .utf8)

        // After the section: wait (at most 15 s) until tetherd has nothing pending (the receiver
        // prints before it answers), then end the session, the shell included: SIGKILL, because
        // its processes inherit the test runner's blocked signals (SIGTERM among them), and all
        // of them, because each holds the output pipe (the runner's pipe descriptors leak into it).
        let drained = "import json, sys; sys.exit(0 if all(e['pending'] == 0 for e in json.load(sys.stdin)['webhooks']) else 1)"
        // A watchdog ends the session (setsid: bash and what it starts) if the section hangs.
        let script = "cd '\(folder.path)'\nset -u\n( sleep 45; kill -KILL 0 ) > /dev/null 2>&1 &\n" + shell.map(local).joined() + """
            for _ in $(seq 150); do
                curl -s http://127.0.0.1:\(ports[1])/webhooks | /usr/bin/python3 -c "\(drained)" && break
                sleep 0.1
            done
            curl -s http://127.0.0.1:\(ports[1])/webhooks >&2
            kill -KILL 0

            """
        let binaries = Daemon.executable("tetherd").deletingLastPathComponent().path
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = binaries + ":/usr/bin:/bin"
        environment["PYTHONPATH"] = Repository.root.appendingPathComponent(".tools/py").path
        let result = try runProgram(URL(fileURLWithPath: "/usr/bin/setsid"), ["/bin/bash", "-c", script], environment: environment, timeout: .seconds(60))
        // Three processes print: only the lines count, not how they interleave.
        let printed = result.stdout.split(separator: "\n").map(String.init).sorted()
        let expected = local(shown[0]).split(separator: "\n").map(String.init).sorted()
        #expect(printed == expected, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
    }
}
