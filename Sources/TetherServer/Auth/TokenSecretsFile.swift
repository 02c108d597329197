import Foundation
import Yams

/// The file of named token secrets (`auth-secrets-file`): a YAML mapping, one `kid: secret`
/// line each, e.g.
///
/// ```yaml
/// 2026-01: "kP0s9...long random text..."
/// 2026-04: "Zq81v...long random text..."
/// ```
///
/// A token whose header says `"kid": "2026-04"` is checked with the second secret.
public enum TokenSecretsFile {
    /// The secrets by key name; every problem is one line naming the file.
    public static func read(_ path: String) throws(ConfigurationError) -> [String: [UInt8]] {
        let option = "auth-secrets-file"
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(option, path) }
        let parsed: Any?
        do {
            parsed = try Yams.load(yaml: String(decoding: data, as: UTF8.self))
        } catch {
            throw .badFile(path, "not a YAML mapping of kid: secret lines: \(String(describing: error).split(separator: "\n").first ?? "")")
        }
        guard let mapping = parsed as? [String: Any], !mapping.isEmpty else {
            throw .badFile(path, "expected kid: secret lines (a YAML mapping), found none")
        }
        var secrets: [String: [UInt8]] = [:]
        for (kid, value) in mapping {
            guard let secret = value as? String else { throw .badFile(path, "\(kid): the secret must be text (quote it)") }
            guard !secret.isEmpty else { throw .badFile(path, "\(kid): empty secret") }
            secrets[kid] = Array(secret.utf8)
        }
        return secrets
    }
}
