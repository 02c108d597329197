import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// The schemas `describe` carries hold for what the demos really publish: a property test in
/// Python (Hypothesis draws action sequences from the schemas; `jsonschema` validates every
/// snapshot and patch's result against the kind's state schema), against a real tetherd.
@Suite("End to end: contract schemas validate the demos' state", .serialized)
struct ContractSchemaPropertyTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Interop/schema_property.py")

    @Test func everySnapshotAndPatchOfEveryDemoKindValidatesAgainstItsSchema() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = [Self.script.path, daemon.url, "30"]
        let output = Pipe()
        python.standardOutput = output
        python.standardError = output
        try python.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        #expect(python.terminationStatus == 0, "schema_property.py: \(text.suffix(3000))")
        let line = try #require(text.split(separator: "\n").last)
        let result = try JSONParser().parse(String(line))
        #expect(result["ok"] == true, "\(text.suffix(3000))")
        // Every demo kind with actions got some of them acknowledged: the drawn arguments reach
        // the ViewModels' code, not only their decoding.
        for kind in ["bench", "calculator", "counter", "exchange", "gallery", "login", "todo", "vote"] {
            #expect((result["kinds"]?[kind]?["ack"]?.intValue ?? 0) > 0, "\(kind): \(result["kinds"]?[kind] ?? .null)")
        }
    }
}
