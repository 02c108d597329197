import Foundation
import Logging
import Testing
import TetherServer

/// The packaged config file is generated from the option table.
@Suite("Sample config file")
struct SampleConfigurationTests {
    @Test func everySettingIsListedWithItsDefaultAndReadsBack() throws {
        let text = SampleConfiguration.text()
        let visible = ServerConfiguration.options.filter { !$0.isHidden }
        for option in visible {
            #expect(text.contains("\n# \(option.key): "), "\(option.key) is listed")
            #expect(text.contains(option.environmentName), "\(option.key)'s environment name is shown")
        }
        // Uncommenting every line that shows a default must read back as the defaults.
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard line.hasPrefix("# "), visible.contains(where: { line.hasPrefix("# \($0.key): ") }),
                  !line.contains(": <") else { return line }
            return line.dropFirst(2)
        }.joined(separator: "\n")
        let file = NSTemporaryDirectory() + "tether-sample-\(UUID().uuidString).yaml"
        try uncommented.write(toFile: file, atomically: true, encoding: .utf8)
        defer { unlink(file) }
        let loaded = try ConfigurationLoader().load(arguments: ["--config", file], environment: [:])
        let defaults = ServerConfiguration()
        for option in visible {
            #expect(option.value(in: loaded.configuration) == option.value(in: defaults), "\(option.key) reads back as its default")
        }
        // Every setting with a default (not a secret, not a path left empty) can be uncommented.
        let withDefaults = visible.filter { !$0.isSecret && $0.value(in: defaults) != nil }
        #expect(uncommented.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.count >= withDefaults.count - 2,
                "most settings have a default to uncomment")
    }

    @Test func givenSettingsAreWrittenUncommentedAndChecked() throws {
        let text = try SampleConfiguration.text(arguments: ["--data", "/var/lib/tether", "--log-format", "json"])
        #expect(text.contains("\ndata: /var/lib/tether\n"))
        #expect(text.contains("\nlog-format: json\n"))
        #expect(text.contains("\n# port: 8080\n"))
        #expect(throws: ConfigurationError.badValue("--port", "x", "an integer")) { try SampleConfiguration.text(arguments: ["--port", "x"]) }
    }
}
