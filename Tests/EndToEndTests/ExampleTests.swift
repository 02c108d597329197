import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// The README's "Write a ViewModel" example is Examples/hello-tether, word for word, and it runs:
/// built as the root package's `hello-tether` target, started on a free port, driven with
/// `tether send`, stopped with SIGTERM.
@Suite("The README's example", .timeLimit(.minutes(2)))
struct ExampleTests {
    static let source = "Examples/hello-tether/Sources/hello-tether/main.swift"

    @Test func theReadmeShowsTheExampleWordForWord() throws {
        let blocks = Repository.codeBlocks(in: try Repository.text("README.md"), section: "## Write a ViewModel", language: "swift")
        let example = try Repository.text(Self.source)
        #expect(blocks.first == example, "README.md's first swift block under \"Write a ViewModel\" must be \(Self.source)")
    }

    @Test func helloTetherServesItsCounterBesideTheDemosAndStopsOnSIGTERM() throws {
        let port = try freePort()
        let process = Process()
        process.executableURL = Daemon.executable("hello-tether")
        process.arguments = ["--port", "\(port)", "--memory-only", "--log-level", "warning"]
        let stdout = Pipe()
        process.standardOutput = stdout
        let stderr = Pipe()
        process.standardError = stderr
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        let url = "ws://127.0.0.1:\(port)"
        func send(_ room: String, _ action: String, _ args: String) throws -> (status: Int32, stdout: String, stderr: String) {
            try runProgram(Daemon.executable("tether"), ["send", "--url", url, "--timeout", "2", room, action, args])
        }
        // Up once `tether send` gets through.
        var first = try send("counter2", "increment", #"{"by": 2}"#)
        let deadline = ContinuousClock.now + .seconds(20)
        while first.status == 1, process.isRunning, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            first = try send("counter2", "increment", #"{"by": 2}"#)
        }
        #expect(first.status == 0, "stdout: \(first.stdout) stderr: \(first.stderr)")
        let ack = try JSONParser().parse(Array(first.stdout.utf8))
        #expect(ack["type"] == "ack" && ack["room"] == "counter2" && ack["version"] == 1)

        let refused = try send("counter2", "increment", #"{"bogus": 1}"#)
        #expect(refused.status == 2)
        #expect(refused.stdout.contains("invalid_args") && refused.stdout.contains("args.bogus"))
        #expect(try send("counter", "increment", "{}").status == 0, "the demos are served too")
        // The line tetherd prints once it listens, from the same code.
        let fd = stdout.fileHandleForReading.fileDescriptor
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)  // printed by now, or never
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        let listening = count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : ""
        #expect(listening == "hello-tether listening on ws://127.0.0.1:\(port)\n", "\(listening)")

        kill(process.processIdentifier, SIGTERM)
        let stopDeadline = ContinuousClock.now + .seconds(10)
        while process.isRunning, ContinuousClock.now < stopDeadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!process.isRunning)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "stderr: \(String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
    }
}
