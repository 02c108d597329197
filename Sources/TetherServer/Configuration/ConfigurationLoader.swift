import Configuration
import Foundation
import Yams

/// Reads settings the way `tetherd` takes them, through swift-configuration: command-line
/// flags, then `TETHERD_*` environment variables, then the config file (`--config FILE` or
/// `TETHERD_CONFIG`, YAML or JSON), then the defaults. Anything unknown or malformed is an error
/// naming it, never silently ignored; every such problem is reported, not only the first. The one
/// exception: a `TETHERD_*` variable that names no setting (a wrapper's `TETHERD_BIN`) is a
/// warning, unless `strict-env` is set.
public struct ConfigurationLoader: Sendable {
    /// The settings, the loader's own options and the program's (tetherd's switches), all read
    /// the same way.
    public var options: [ConfigurationOption]

    public static let configFileKey = "config"
    public static let strictEnvironmentKey = "strict-env"

    /// Options about reading the settings themselves.
    static let ownOptions: [ConfigurationOption] = [
        .program(configFileKey, value: "path", "A config file (YAML or JSON) with any of the settings above, keys as the option names without dashes."),
        .program(strictEnvironmentKey, value: nil, "Refuse to start on a TETHERD_ environment variable that names no setting, instead of warning about it and going on."),
    ]

    public init(programOptions: [ConfigurationOption] = []) {
        options = ServerConfiguration.options + Self.ownOptions + programOptions
    }

    /// What was read: the configuration, the config file used, the program options' values, and
    /// warnings to log (one line each).
    public struct Result: Sendable {
        public var configuration: ServerConfiguration
        public var configFile: String?
        public var programValues: [String: String]
        public var warnings: [String]
    }

    public func load(arguments: [String], environment: [String: String],
                     defaults: ServerConfiguration = ServerConfiguration()) throws(ConfigurationError) -> Result {
        var problems: [ConfigurationError] = []
        let flags = readArguments(arguments, problems: &problems)
        let configFile = flags[Self.configFileKey] ?? environment[ConfigurationOption.environmentPrefix + "CONFIG"]
        let fileValues = configFile.map { readFile($0, problems: &problems) } ?? [:]

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
            // Where the value came from, for a message about it (the reader's order).
            let source = flags[option.key] != nil ? option.flag : environment[option.environmentName] != nil ? option.environmentName
                : "\(configFile ?? "the config file"): \(option.key)"
            guard let text = value else {
                // Present somewhere yet unreadable as its type (a flag's value that is no boolean).
                if let given = flags[option.key] ?? environment[option.environmentName] ?? fileValues[option.key] {
                    problems.append(.badValue(source, given, option.isFlag ? "true or false" : "readable"))
                }
                continue
            }
            if program.contains(option.key) {
                programValues[option.key] = text
            } else {
                do {
                    try option.apply(&configuration, text)
                } catch {
                    problems.append(error.given(by: source))
                }
            }
        }
        let strict = programValues[Self.strictEnvironmentKey] == "true"
        var warnings: [String] = []
        for name in unknownEnvironmentVariables(environment) {
            if strict {
                problems.append(.unknownEnvironmentVariable(name))
            } else {
                warnings.append("ignored the environment variable \(name): it names no setting (the closest is \(closestEnvironmentName(to: name))); --strict-env refuses it")
            }
        }
        let given = { (key: String) in reader.string(forKey: ConfigKey([key]), isSecret: true) != nil }
        if given("auth-secret"), given("auth-secret-file") { problems.append(.invalid("give auth-secret or auth-secret-file, not both")) }
        problems += Self.problems(in: configuration)
        if let error = ConfigurationError.combining(problems) { throw error }
        return Result(configuration: configuration, configFile: configFile, programValues: programValues, warnings: warnings)
    }

    /// Rules that span settings.
    public static func validate(_ configuration: ServerConfiguration) throws(ConfigurationError) {
        if let error = ConfigurationError.combining(problems(in: configuration)) { throw error }
    }

    static func problems(in configuration: ServerConfiguration) -> [ConfigurationError] {
        var problems: [ConfigurationError] = []
        if (configuration.tlsCertificatePath == nil) != (configuration.tlsKeyPath == nil) {
            problems.append(.invalid("tls-cert and tls-key go together"))
        }
        if !configuration.requiresTokens, !configuration.allowAnonymous, !isLoopback(configuration.host) {
            problems.append(.invalid("refusing to listen on \(configuration.host) without auth-secret: anyone could join every room. Set auth-secret-file or jwks-url (or allow-anonymous)."))
        }
        problems += identityProviderProblems(in: configuration)
        if configuration.peerTimeout <= configuration.pingInterval {
            problems.append(.invalid("peer-timeout-seconds must be longer than ping-seconds"))
        }
        return problems
    }

    /// A key set is bound to one issuer: without it, any issuer's tokens would be checked with
    /// these keys. Plain http only on loopback (tests, a sidecar): elsewhere the keys could be
    /// swapped on the way.
    static func identityProviderProblems(in configuration: ServerConfiguration) -> [ConfigurationError] {
        switch (configuration.jwksURL, configuration.tokenIssuer) {
        case (nil, nil):
            return configuration.tokenAudience == nil ? [] : [.invalid("token-audience needs jwks-url and token-issuer")]
        case (_?, nil): return [.invalid("jwks-url needs token-issuer: the exact iss of the provider's tokens, which its keys are bound to")]
        case (nil, _?): return [.invalid("token-issuer needs jwks-url: where the provider publishes its keys")]
        case (let text?, _?):
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host else {
                return [.badValue("jwks-url", text, "an https:// URL")]
            }
            if scheme == "https" || (scheme == "http" && (isLoopback(host) || host == "[::1]")) { return [] }
            return [.badValue("jwks-url", text, "an https:// URL (http:// only on loopback)")]
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    // MARK: Checks

    /// Every `--flag` must be known and a non-flag option needs a value. Returns the values.
    func checkArguments(_ arguments: [String]) throws(ConfigurationError) -> [String: String] {
        var problems: [ConfigurationError] = []
        let values = readArguments(arguments, problems: &problems)
        if let error = ConfigurationError.combining(problems) { throw error }
        return values
    }

    /// The flags' values; what is wrong with them goes to `problems`.
    private func readArguments(_ arguments: [String], problems: inout [ConfigurationError]) -> [String: String] {
        let byKey = Dictionary(options.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var values: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else {
                problems.append(.unexpectedArgument(argument))
                continue
            }
            let body = argument.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inline = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            if name == Self.configFileKey {
                guard let value = inline ?? (index < arguments.count ? arguments[index] : nil) else {
                    problems.append(.missingValue(argument))
                    continue
                }
                if inline == nil { index += 1 }
                values[name] = value
                continue
            }
            guard let option = byKey[name] else {
                problems.append(.unknownFlag("--\(name)"))
                if inline == nil, index < arguments.count, !arguments[index].hasPrefix("--") { index += 1 }  // its value, likely
                continue
            }
            if option.isFlag {
                values[name] = inline ?? "true"
            } else if let inline {
                values[name] = inline
            } else {
                guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                    problems.append(.missingValue(option.flag))
                    continue
                }
                values[name] = arguments[index]
                index += 1
            }
        }
        return values
    }

    /// `TETHERD_*` variables that name no option, sorted.
    private func unknownEnvironmentVariables(_ environment: [String: String]) -> [String] {
        let known = Set(options.map(\.environmentName))
        return environment.keys.sorted().filter { $0.hasPrefix(ConfigurationOption.environmentPrefix) && !known.contains($0) }
    }

    /// The known variable nearest to `name` by edit distance (a typo's intended setting).
    private func closestEnvironmentName(to name: String) -> String {
        let candidates = options.filter { !$0.isHidden }.map(\.environmentName)
        return candidates.min { Self.editDistance($0, name) < Self.editDistance($1, name) } ?? ""
    }

    /// Levenshtein distance: insertions, deletions and substitutions of one character each.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let b = Array(b)
        var row = Array(0...b.count)  // distances from a's prefix so far to each prefix of b
        for (i, x) in a.enumerated() {
            var diagonal = row[0]
            row[0] = i + 1
            for (j, y) in b.enumerated() {
                let above = row[j + 1]
                row[j + 1] = min(diagonal + (x == y ? 0 : 1), above + 1, row[j] + 1)
                diagonal = above
            }
        }
        return row[b.count]
    }

    /// The file's settings as text, each key checked against the options; what is wrong with it
    /// goes to `problems`.
    private func readFile(_ path: String, problems: inout [ConfigurationError]) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            problems.append(.unreadable("config", path))
            return [:]
        }
        let parsed: Any?
        do {
            // YAML is a superset of JSON, so one parser reads both.
            parsed = try Yams.load(yaml: String(decoding: data, as: UTF8.self))
        } catch {
            problems.append(.badFile(path, "not valid YAML or JSON: \(String(describing: error).split(separator: "\n").first ?? "")"))
            return [:]
        }
        guard let parsed else { return [:] }
        guard let mapping = parsed as? [String: Any] else {
            problems.append(.badFile(path, "expected a mapping of settings (key: value)"))
            return [:]
        }
        let known = Set(options.map(\.key))
        var values: [String: String] = [:]
        for (key, value) in mapping.sorted(by: { $0.key < $1.key }) {
            guard known.contains(key) else {
                problems.append(.unknownFileKey(file: path, key: key))
                continue
            }
            switch value {
            case let list as [Any] where key == "webhooks":
                // The one structured setting: handed on as JSON.
                if let data = try? JSONSerialization.data(withJSONObject: list) { values[key] = String(decoding: data, as: UTF8.self) }
            case let text as String: values[key] = text
            case let flag as Bool: values[key] = flag ? "true" : "false"
            case let number as Int: values[key] = "\(number)"
            case let number as Double: values[key] = "\(number)"
            case is NSNull: continue
            default: problems.append(.badFile(path, "\(key): expected a single value, got \(type(of: value))"))
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
