import Foundation
import Testing
import TetherTestSupport

/// docs/CLIENTS.md's "Backends over HTTP" runs as written: its shell and Python blocks in order, in one
/// shell, against a real tetherd that requires tokens, each printing what the block after it
/// shows (epochs aside: each room has its own).
@Suite("End to end: the HTTP API's documented examples", .timeLimit(.minutes(2)))
struct HTTPAPIDocumentTests {
    static let document = "docs/CLIENTS.md"
    static let section = "## Backends over HTTP"
    static let marker = "@@ next block @@"

    @Test func theBackendsSectionPrintsWhatItShows() throws {
        let markdown = try Repository.text(Self.document)
        let blocks = MarkdownBlocks.of(markdown, section: Self.section)
        let commands = blocks.filter { $0.language == "sh" || $0.language == "python" }
        let shown = blocks.filter { $0.language == "text" }.map(\.text)
        #expect(commands.count == shown.count && commands.count >= 6, "each command block is followed by the text it prints")

        let secret = "http-api-document-secret"
        let daemon = try Daemon(arguments: ["--auth-secret", secret, "--memory-only"])
        defer { _ = daemon.stop() }
        var script = "set -u\n"
        for command in commands {
            switch command.language {
            case "python": script += "/usr/bin/python3 - <<'PYTHON'\n\(command.text)PYTHON\n"
            default: script += command.text
            }
            script += "echo '\(Self.marker)'\n"
        }
        let binaries = Daemon.executable("tetherd").deletingLastPathComponent().path
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = binaries + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["TETHER"] = "http://127.0.0.1:\(daemon.port)"
        environment["SECRET"] = secret
        let result = try runProgram(URL(fileURLWithPath: "/bin/bash"), ["-c", script], environment: environment, timeout: .seconds(60))
        #expect(result.status == 0, "\(result.stderr)")
        var printed = result.stdout.components(separatedBy: Self.marker + "\n")
        printed.removeLast()
        #expect(printed.count == shown.count, "stdout: \(result.stdout) stderr: \(result.stderr)")
        for (index, (got, expected)) in zip(printed, shown).enumerated() {
            #expect(Self.normalized(got) == Self.normalized(expected), "block \(index + 1): printed\n\(got)\nshown\n\(expected)")
        }
    }

    /// Epochs are random: each becomes EPOCH. curl prints no newline after a body: the last ones
    /// do not count.
    static func normalized(_ text: String) -> String {
        var text = text.replacingOccurrences(of: "\r", with: "")
        while text.hasSuffix("\n") { text.removeLast() }
        for pattern in [#"(?<="epoch":")[A-Za-z0-9_-]+"#, #"(?<=^id: )[A-Za-z0-9_-]+(?=\.)"#] {
            let regex = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
            text = regex.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "EPOCH")
        }
        return text
    }
}
