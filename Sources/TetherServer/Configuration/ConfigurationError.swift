/// Why settings could not be read; one line each.
public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
    case unknownFlag(String)
    case missingValue(String)
    case unexpectedArgument(String)
    case unknownEnvironmentVariable(String)
    case unknownFileKey(file: String, key: String)
    case badFile(String, String)
    /// Where the value was given (`ConfigurationLoader` names the source: `--port`,
    /// `TETHERD_PORT`, `FILE: port`; a setting's own check only knows its key), the value, and
    /// what it should be.
    case badValue(String, String, String)
    /// Where the path was given (as for `badValue`), and the path.
    case unreadable(String, String)
    case invalid(String)
    /// More than one of the above, in the order found (`tetherd check` reports them all).
    case several([ConfigurationError])

    /// One line each: the problems this error holds.
    public var problems: [ConfigurationError] {
        if case .several(let problems) = self { return problems.flatMap(\.problems) }
        return [self]
    }

    /// `problems` as one error (itself when there is one); nil for none.
    static func combining(_ problems: [ConfigurationError]) -> ConfigurationError? {
        problems.count > 1 ? .several(problems) : problems.first
    }

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
        case .several(let problems): return problems.map(\.description).joined(separator: "\n")
        }
    }
}

extension ConfigurationError {
    /// The error with `source` (`--port`, `TETHERD_PORT`, `FILE: port`) in place of the bare
    /// key, so the user knows which of flag, environment and file to fix.
    func given(by source: String) -> ConfigurationError {
        switch self {
        case .badValue(_, let value, let expected): return .badValue(source, value, expected)
        case .unreadable(_, let path): return .unreadable(source, path)
        case .several(let problems): return .several(problems.map { $0.given(by: source) })
        default: return self
        }
    }
}
