import Configuration
import Foundation
import Yams

/// Why settings could not be read; one line each.
public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
    case unknownFlag(String)
    case missingValue(String)
    case unexpectedArgument(String)
    case unknownEnvironmentVariable(String)
    case unknownFileKey(file: String, key: String)
    case badFile(String, String)
    case badValue(String, String, String)
    case unreadable(String, String)
    case invalid(String)

    public var description: String {
        switch self {
        case .unknownFlag(let flag): return "unknown option \(flag) (see tetherd --help)"
        case .missingValue(let flag): return "\(flag) needs a value"
        case .unexpectedArgument(let argument): return "unexpected argument \"\(argument)\" (options start with --; see tetherd --help)"
        case .unknownEnvironmentVariable(let name): return "unknown environment variable \(name) (see tetherd --help for the TETHERD_ names)"
        case .unknownFileKey(let file, let key): return "\(file): unknown setting \"\(key)\" (see tetherd --help)"
        case .badFile(let file, let reason): return "\(file): \(reason)"
        case .badValue(let key, let value, let expected): return "\(key): \"\(value)\" is not \(expected)"
        case .unreadable(let key, let path): return "\(key): cannot read \(path)"
        case .invalid(let reason): return reason
        }
    }
}

/// Reads settings the way `tetherd` takes them, through swift-configuration: command-line
/// flags, then `TETHERD_*` environment variables, then the config file (`--config FILE` or
/// `TETHERD_CONFIG`, YAML or JSON), then the defaults. Anything unknown or malformed is an error
/// naming it, never silently ignored.
public struct ConfigurationLoader: Sendable {
    /// The settings and the program's own options (tetherd's switches), all read the same way.
    public var options: [ConfigurationOption]

    public static let configFileKey = "config"

    public init(programOptions: [ConfigurationOption] = []) {
        options = ServerConfiguration.options + programOptions
    }

    /// What was read: the configuration, the config file used, and the program options' values.
    public struct Result: Sendable {
        public var configuration: ServerConfiguration
        public var configFile: String?
        public var programValues: [String: String]
    }

    public func load(arguments: [String], environment: [String: String],
                     defaults: ServerConfiguration = ServerConfiguration()) throws(ConfigurationError) -> Result {
        let flags = try checkArguments(arguments)
        try checkEnvironment(environment)
        let configFile = flags[Self.configFileKey] ?? environment[ConfigurationOption.environmentPrefix + "CONFIG"]
        let fileValues = try configFile.map { path throws(ConfigurationError) in try readFile(path) } ?? [:]

        let secrets = Set(options.filter(\.isSecret).map(\.key))
        let flagKeys = Set(options.filter(\.isFlag).map(\.key))
        // A flag's value as a boolean when it reads as one (else the check below names it).
        func content(_ key: String, _ value: String) -> ConfigContent {
            flagKeys.contains(key) ? Bool(value.lowercased()).map(ConfigContent.bool) ?? .string(value) : .string(value)
        }
        let reader = ConfigReader(providers: [
            // The flags as checked above (one value each: a repeated flag's last wins). The CLI
            // provider of swift-configuration neither refuses unknown flags nor keeps commas in a
            // value, so tetherd reads its own command line and hands swift-configuration the result.
            InMemoryProvider(name: "command line", values: Dictionary(uniqueKeysWithValues: flags.map { key, value in
                (AbsoluteConfigKey([key]), ConfigValue(content(key, value), isSecret: secrets.contains(key)))
            })),
            EnvironmentVariablesProvider(environmentVariables: environment,
                                         secretsSpecifier: .dynamic { name, _ in name.hasSuffix("SECRET") })
                .prefixKeys(with: ["tetherd"]),
            InMemoryProvider(name: configFile, values: Dictionary(uniqueKeysWithValues: fileValues.map { key, value in
                (AbsoluteConfigKey([key]), ConfigValue(content(key, value), isSecret: secrets.contains(key)))
            })),
        ])

        var configuration = defaults
        var programValues: [String: String] = [:]
        let program = Set(options.map(\.key)).subtracting(ServerConfiguration.options.map(\.key))
        for option in options {
            let key = ConfigKey([option.key])
            let value = option.isFlag ? reader.bool(forKey: key).map { $0 ? "true" : "false" }
                : reader.string(forKey: key, isSecret: option.isSecret)
            guard let text = value else {
                // Present somewhere yet unreadable as its type (a flag's value that is no boolean).
                if let given = flags[option.key] ?? environment[option.environmentName] ?? fileValues[option.key] {
                    throw .badValue(option.key, given, option.isFlag ? "true or false" : "readable")
                }
                continue
            }
            if program.contains(option.key) {
                programValues[option.key] = text
            } else {
                try option.apply(&configuration, text)
            }
        }
        let given = { (key: String) in reader.string(forKey: ConfigKey([key]), isSecret: true) != nil }
        if given("auth-secret"), given("auth-secret-file") { throw .invalid("give auth-secret or auth-secret-file, not both") }
        try Self.validate(configuration)
        return Result(configuration: configuration, configFile: configFile, programValues: programValues)
    }

    /// Rules that span settings.
    public static func validate(_ configuration: ServerConfiguration) throws(ConfigurationError) {
        if (configuration.tlsCertificatePath == nil) != (configuration.tlsKeyPath == nil) {
            throw .invalid("tls-cert and tls-key go together")
        }
        if configuration.auth == nil, !configuration.allowAnonymous, !isLoopback(configuration.host) {
            throw .invalid("refusing to listen on \(configuration.host) without auth-secret: anyone could join every room. Set auth-secret-file (or allow-anonymous).")
        }
        if configuration.peerTimeout <= configuration.pingInterval {
            throw .invalid("peer-timeout-seconds must be longer than ping-seconds")
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    // MARK: Checks

    /// Every `--flag` must be known and a non-flag option needs a value. Returns the values.
    func checkArguments(_ arguments: [String]) throws(ConfigurationError) -> [String: String] {
        let byKey = Dictionary(options.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var values: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else { throw .unexpectedArgument(argument) }
            let body = argument.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inline = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            if name == Self.configFileKey {
                guard let value = inline ?? (index < arguments.count ? arguments[index] : nil) else { throw .missingValue(argument) }
                if inline == nil { index += 1 }
                values[name] = value
                continue
            }
            guard let option = byKey[name] else { throw .unknownFlag("--\(name)") }
            if option.isFlag {
                values[name] = inline ?? "true"
            } else if let inline {
                values[name] = inline
            } else {
                guard index < arguments.count, !arguments[index].hasPrefix("--") else { throw .missingValue(option.flag) }
                values[name] = arguments[index]
                index += 1
            }
        }
        return values
    }

    private func checkEnvironment(_ environment: [String: String]) throws(ConfigurationError) {
        let known = Set(options.map(\.environmentName) + [ConfigurationOption.environmentPrefix + "CONFIG"])
        for name in environment.keys.sorted() where name.hasPrefix(ConfigurationOption.environmentPrefix) && !known.contains(name) {
            throw .unknownEnvironmentVariable(name)
        }
    }

    /// The file's settings as text, each key checked against the options.
    private func readFile(_ path: String) throws(ConfigurationError) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable("config", path) }
        let parsed: Any?
        do {
            // YAML is a superset of JSON, so one parser reads both.
            parsed = try Yams.load(yaml: String(decoding: data, as: UTF8.self))
        } catch {
            throw .badFile(path, "not valid YAML or JSON: \(String(describing: error).split(separator: "\n").first ?? "")")
        }
        guard let parsed else { return [:] }
        guard let mapping = parsed as? [String: Any] else { throw .badFile(path, "expected a mapping of settings (key: value)") }
        let known = Set(options.map(\.key))
        var values: [String: String] = [:]
        for (key, value) in mapping {
            guard known.contains(key) else { throw .unknownFileKey(file: path, key: key) }
            switch value {
            case let text as String: values[key] = text
            case let flag as Bool: values[key] = flag ? "true" : "false"
            case let number as Int: values[key] = "\(number)"
            case let number as Double: values[key] = "\(number)"
            case is NSNull: continue
            default: throw .badFile(path, "\(key): expected a single value, got \(type(of: value))")
            }
        }
        return values
    }
}

extension ConfigurationOption {
    /// An option of the program itself (not a server setting), read the same way; its value is
    /// returned in `ConfigurationLoader.Result.programValues`.
    public static func program(_ key: String, value: String?, _ help: String, hidden: Bool = false) -> ConfigurationOption {
        ConfigurationOption(key, value: value, help, hidden: hidden, apply: { _, _ in }, current: { _ in nil })
    }

    /// `--help` lines for `options`, each with its default and environment name.
    public static func helpText(_ options: [ConfigurationOption], defaults: ServerConfiguration = ServerConfiguration()) -> String {
        options.filter { !$0.isHidden }.map { option in
            let left = option.valueName.map { "\(option.flag) <\($0)>" } ?? option.flag
            var details = [String]()
            if let value = option.value(in: defaults), !option.isSecret, !(option.isFlag && value == "false") { details.append("default \(value)") }
            details.append(option.environmentName)
            if option.isReloadable { details.append("reloadable") }
            return "  \(left)\n      \(option.help) (\(details.joined(separator: "; ")))"
        }.joined(separator: "\n")
    }
}
