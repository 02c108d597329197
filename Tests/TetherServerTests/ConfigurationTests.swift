import Foundation
import Logging
import Testing
import TetherServer

/// `ConfigurationLoader`: each source of settings, their precedence (flags > TETHERD_*
/// environment > config file > defaults), and a one-line error for anything unknown or malformed.
@Suite("Settings from flags, environment and file")
struct ConfigurationTests {
    let loader = ConfigurationLoader()

    /// A config file in a fresh temporary directory, removed by `remove()`.
    struct ConfigFile {
        let path: String
        init(_ text: String, extension suffix: String) throws {
            path = NSTemporaryDirectory() + "tether-config-\(UUID().uuidString).\(suffix)"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }
        func remove() { unlink(path) }
    }

    func load(_ arguments: [String] = [], environment: [String: String] = [:]) throws(ConfigurationError) -> ServerConfiguration {
        try loader.load(arguments: arguments, environment: environment).configuration
    }

    // MARK: Each layer

    @Test func defaultsComeFromServerConfiguration() throws {
        let loaded = try loader.load(arguments: [], environment: [:])
        let defaults = ServerConfiguration()
        #expect(loaded.configFile == nil)
        for option in ServerConfiguration.options {
            #expect(option.value(in: loaded.configuration) == option.value(in: defaults), "\(option.key)")
        }
        #expect(loaded.configuration.port == 8080 && loaded.configuration.maxStateBytes == 1_000_000)
    }

    @Test func flags() throws {
        let configuration = try load(["--port", "9001", "--log-level=debug", "--memory-only", "--idle-room-seconds", "2.5",
                                      "--max-actions-per-second", "7.5", "--durability", "strict"])
        #expect(configuration.port == 9001)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.dataDirectory == nil)
        #expect(configuration.idleRoomTimeout == .milliseconds(2500))
        #expect(configuration.maxActionsPerSecond == 7.5)
        #expect(configuration.durability == .strict)
    }

    @Test func environmentVariables() throws {
        let configuration = try load(environment: ["TETHERD_PORT": "9002", "TETHERD_MAX_ROOMS": "7", "TETHERD_MEMORY_ONLY": "true",
                                                   "TETHERD_LOG_FORMAT": "json", "PATH": "/usr/bin", "TETHER_URL": "ws://x"])
        #expect(configuration.port == 9002)
        #expect(configuration.maxRooms == 7)
        #expect(configuration.dataDirectory == nil)
        #expect(configuration.logFormat == .json)
    }

    @Test func aYAMLFile() throws {
        let file = try ConfigFile("# a comment\nport: 9003\nmax-rooms: 8\nlog-level: notice\nmemory-only: true\nhost: \"127.0.0.2\"\n", extension: "yaml")
        defer { file.remove() }
        let loaded = try loader.load(arguments: ["--config", file.path], environment: [:])
        #expect(loaded.configFile == file.path)
        #expect(loaded.configuration.port == 9003 && loaded.configuration.maxRooms == 8)
        #expect(loaded.configuration.logLevel == .notice && loaded.configuration.dataDirectory == nil)
        #expect(loaded.configuration.host == "127.0.0.2")
    }

    @Test func aJSONFile() throws {
        let file = try ConfigFile(#"{"port": 9004, "stuck-client-seconds": 1.5, "allow-anonymous": false, "data": "/tmp/tether-x"}"#, extension: "json")
        defer { file.remove() }
        let configuration = try load(["--config=\(file.path)"])
        #expect(configuration.port == 9004)
        #expect(configuration.stuckClientTimeout == .milliseconds(1500))
        #expect(configuration.dataDirectory == "/tmp/tether-x")
    }

    @Test func theFileCanBeNamedInTheEnvironment() throws {
        let file = try ConfigFile("port: 9005\n", extension: "yaml")
        defer { file.remove() }
        let loaded = try loader.load(arguments: [], environment: ["TETHERD_CONFIG": file.path])
        #expect(loaded.configFile == file.path && loaded.configuration.port == 9005)
    }

    // MARK: Precedence

    @Test func flagsBeatTheEnvironmentWhichBeatsTheFileWhichBeatsTheDefaults() throws {
        let file = try ConfigFile("port: 9010\nmax-rooms: 10\nmax-connections: 10\nlog-level: error\n", extension: "yaml")
        defer { file.remove() }
        let environment = ["TETHERD_PORT": "9020", "TETHERD_MAX_ROOMS": "20"]
        let configuration = try load(["--config", file.path, "--port", "9030"], environment: environment)
        #expect(configuration.port == 9030, "flag over environment and file")
        #expect(configuration.maxRooms == 20, "environment over file")
        #expect(configuration.maxConnections == 10, "file over default")
        #expect(configuration.logLevel == .error, "file over default")
        #expect(configuration.maxRoomsPerConnection == ServerConfiguration().maxRoomsPerConnection, "default when no layer sets it")

        let withoutFlag = try load(["--config", file.path], environment: environment)
        #expect(withoutFlag.port == 9020)
        let fileOnly = try load(["--config", file.path])
        #expect(fileOnly.port == 9010)
    }

    @Test func aFlagCanTurnOffWhatTheEnvironmentTurnedOn() throws {
        let configuration = try load(["--allow-anonymous=false", "--host", "0.0.0.0", "--auth-secret", "s"],
                                     environment: ["TETHERD_ALLOW_ANONYMOUS": "true"])
        #expect(!configuration.allowAnonymous)
    }

    @Test func theLastOfARepeatedFlagWins() throws {
        #expect(try load(["--port", "9040", "--port", "9041"]).port == 9041)
    }

    // MARK: Errors: one line each

    static let refusals: [(arguments: [String], environment: [String: String], file: String?, expected: ConfigurationError)] = [
        (["--nope", "1"], [:], nil, .unknownFlag("--nope")),
        (["--port"], [:], nil, .missingValue("--port")),
        (["serve"], [:], nil, .unexpectedArgument("serve")),
        (["--strict-env"], ["TETHERD_PROT": "9000"], nil, .unknownEnvironmentVariable("TETHERD_PROT")),
        (["--port", "x"], [:], nil, .badValue("--port", "x", "an integer")),
        (["--port", "70000"], [:], nil, .badValue("--port", "70000", "from 0 to 65535")),
        ([], ["TETHERD_MAX_ROOMS": "many"], nil, .badValue("TETHERD_MAX_ROOMS", "many", "an integer")),
        (["--log-level", "loud"], [:], nil, .badValue("--log-level", "loud", "one of trace, debug, info, notice, warning, error, critical")),
        (["--idle-room-seconds", "-1"], [:], nil, .badValue("--idle-room-seconds", "-1", "a positive number of seconds")),
        (["--memory-only=maybe"], [:], nil, .badValue("--memory-only", "maybe", "true or false")),
        (["--tls-cert", "c.pem"], [:], nil, .invalid("tls-cert and tls-key go together")),
        (["--ping-seconds", "30", "--peer-timeout-seconds", "20"], [:], nil, .invalid("peer-timeout-seconds must be longer than ping-seconds")),
    ]

    @Test(arguments: refusals.indices)
    func everyMistakeIsOneLineNamingIt(_ index: Int) {
        let refusal = Self.refusals[index]
        #expect(throws: refusal.expected) { try load(refusal.arguments, environment: refusal.environment) }
        #expect(!refusal.expected.description.contains("\n"))
    }

    @Test func anUnknownKeyInTheFileIsNamed() throws {
        let yaml = try ConfigFile("port: 9000\nmax-room: 5\n", extension: "yaml")
        let json = try ConfigFile(#"{"port": 9000, "colour": "blue"}"#, extension: "json")
        defer { yaml.remove(); json.remove() }
        #expect(throws: ConfigurationError.unknownFileKey(file: yaml.path, key: "max-room")) { try load(["--config", yaml.path]) }
        #expect(throws: ConfigurationError.unknownFileKey(file: json.path, key: "colour")) { try load(["--config", json.path]) }
    }

    @Test func aBadValueInTheFileIsNamed() throws {
        let file = try ConfigFile("port: eighty\n", extension: "yaml")
        defer { file.remove() }
        #expect(throws: ConfigurationError.badValue("\(file.path): port", "eighty", "an integer")) { try load(["--config", file.path]) }
    }

    /// A value names where it was given: the flag, the variable or the file.
    @Test func aBadValueNamesItsSource() throws {
        let flag = #expect(throws: ConfigurationError.self) { try load(["--port", "abc"]) }
        #expect(flag?.description == #"--port: "abc" is not an integer"#)
        let variable = #expect(throws: ConfigurationError.self) { try load(environment: ["TETHERD_PORT": "abc"]) }
        #expect(variable?.description == #"TETHERD_PORT: "abc" is not an integer"#)
        let missing = #expect(throws: ConfigurationError.self) { try load(environment: ["TETHERD_AUTH_SECRET_FILE": "/nonexistent/secret"]) }
        #expect(missing?.description == "TETHERD_AUTH_SECRET_FILE: cannot read /nonexistent/secret")
    }

    /// YAML 1.1 reads on and off as booleans; an on/off setting takes them (and true/false) as on and off.
    @Test func anOnOffSettingTakesYAMLsBooleans() throws {
        for (text, expected) in [("on", Compression.on), ("off", .off), ("true", .on), ("false", .off)] {
            let file = try ConfigFile("compression: \(text)\n", extension: "yaml")
            defer { file.remove() }
            #expect(try load(["--config", file.path]).compression == expected, "compression: \(text)")
        }
        #expect(try load(environment: ["TETHERD_COMPRESSION": "true"]).compression == .on)
        #expect(throws: ConfigurationError.badValue("--log-level", "true", "one of trace, debug, info, notice, warning, error, critical")) {
            try load(["--log-level", "true"])
        }
    }

    @Test func aBrokenOrMissingFileIsOneLine() throws {
        let broken = try ConfigFile("port: [9000\n", extension: "yaml")
        let list = try ConfigFile("- port\n", extension: "yaml")
        defer { broken.remove(); list.remove() }
        for path in [broken.path, list.path, "/nonexistent/tetherd.yaml"] {
            do {
                _ = try load(["--config", path])
                Issue.record("\(path) was accepted")
            } catch {
                #expect(error.description.contains(path), "\(error)")
                #expect(!error.description.contains("\n"), "\(error)")
            }
        }
    }

    @Test func twoSourcesOfOneSecretAreRefusedWithoutEchoingIt() throws {
        let secretFile = try ConfigFile("s3cret-in-file\n", extension: "txt")
        defer { secretFile.remove() }
        let error = #expect(throws: ConfigurationError.invalid("give auth-secret or auth-secret-file, not both")) {
            try load(["--auth-secret-file", secretFile.path], environment: ["TETHERD_AUTH_SECRET": "hunter2"])
        }
        #expect(error?.description.contains("hunter2") == false)
    }
}
