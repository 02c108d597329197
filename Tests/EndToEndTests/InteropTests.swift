import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport

/// A client in another language, written from docs/PROTOCOL.md alone (Python with
/// `websockets` and `jsonpatch`), mirrors a todo room while Swift clients change it too.
@Suite("End to end: interop", .serialized)
@MainActor
struct InteropTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Interop/mirror_todo.py")

    @Test func pythonClientMirrorsTodoFromTheProtocolDocAlone() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = [Self.script.path, daemon.url, "todo:interop", "40", "40"]
        let output = Pipe()
        python.standardOutput = output
        python.standardError = output
        try python.run()
        defer { if python.isRunning { python.terminate() } }

        let swift = try await connectedClient(daemon)
        let room = swift.room("todo:interop")
        // Act while the Python client is in the room: wait for its first change, then pace the adds.
        try await eventually("the python client acts", timeout: .seconds(30)) {
            room.state["items"]?.arrayValue?.contains { $0["title"]?.stringValue?.hasPrefix("from python") == true } == true
        }
        for i in 0..<40 {
            _ = try await swift.send("add", to: "todo:interop", args: ["title": .string("from swift \(i)")])
            try await Task.sleep(for: .milliseconds(10))
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while python.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(python.terminationStatus == 0, "python client: \(text)")
        let line = try #require(text.split(separator: "\n").last)
        let result = try JSONParser().parse(String(line))
        #expect(result["ok"] == true)
        #expect((result["patches"]?.intValue ?? 0) > 40, "it saw the Swift client's changes as patches")
        let referenceClient = try await connectedClient(daemon)
        let fresh = referenceClient.room("todo:interop")
        try await eventually("mirror \(String(describing: room.version)) vs fresh \(String(describing: fresh.version))") { fresh.isSynced && room.version == fresh.version }
        #expect(room.state == fresh.state)
        #expect((result["version"]?.intValue ?? 0) <= fresh.version!)
        await swift.close()
        await referenceClient.close()
    }

    /// Nothing to wait for from others (FOREIGN 0): the script must finish once its own actions
    /// are acked, not wait for a message that never comes.
    @Test func pythonClientAloneInTheRoomFinishes() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let run = try runProgram(URL(fileURLWithPath: "/usr/bin/python3"), [Self.script.path, daemon.url, "todo:alone", "5", "0"],
                                 timeout: .seconds(20))
        #expect(run.status == 0, "python client: \(run.stdout)\(run.stderr)")
        let line = try #require(run.stdout.split(separator: "\n").last, "no result line: \(run.stderr)")
        let result = try JSONParser().parse(String(line))
        #expect(result["ok"] == true)
        // Five actions: add, add, toggle, add, add.
        #expect(result["version"]?.intValue == 5)
        #expect(result["items"]?.intValue == 4)
    }
}
