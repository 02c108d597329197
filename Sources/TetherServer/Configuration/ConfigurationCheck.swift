import Foundation
import TetherTransport

/// What `tetherd check` finds wrong with settings that loaded: the problems that would only
/// show when the daemon starts (or reloads), as one line each. Run it as the user the daemon
/// runs as (`sudo -u tether tetherd check --config /etc/tether/tetherd.yaml`): readability is
/// that user's.
public enum ConfigurationCheck {
    public static func problems(_ configuration: ServerConfiguration) -> [String] {
        var problems: [String] = []
        if let tls = configuration.tls {
            if let problem = tls.problem { problems.append("tls: \(problem)") }
            if let problem = exposedSecret(tls.privateKeyPath, option: "tls-key") { problems.append(problem) }
        }
        for (option, path) in [("auth-secret-file", configuration.authSecretFile), ("auth-secrets-file", configuration.authSecretsFile)] {
            if let path, let problem = exposedSecret(path, option: option) { problems.append(problem) }
        }
        if let directory = configuration.dataDirectory { problems += dataDirectoryProblems(directory) }
        if let problem = privilegedPortProblem(configuration.port) { problems.append(problem) }
        return problems
    }

    /// A secret file other users can read.
    static func exposedSecret(_ path: String, option: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o007 != 0 else { return nil }
        return "\(option): \(path) can be read by every user (mode \(String(info.st_mode & 0o777, radix: 8))); chmod o-rwx it"
    }

    static func dataDirectoryProblems(_ directory: String) -> [String] {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            // Created at start: the nearest existing parent must let us.
            var parent = (directory as NSString).deletingLastPathComponent
            if parent.isEmpty { parent = "." }
            while stat(parent, &info) != 0, parent != "/", parent != "." { parent = (parent as NSString).deletingLastPathComponent }
            return access(parent, W_OK | X_OK) == 0 ? [] : ["data: \(directory) does not exist and cannot be created (\(parent) is not writable)"]
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return ["data: \(directory) is not a directory"] }
        var problems: [String] = []
        if access(directory, R_OK | W_OK | X_OK) != 0 { problems.append("data: \(directory) is not writable (\(String(cString: strerror(errno))))") }
        if info.st_mode & 0o002 != 0 { problems.append("data: \(directory) can be written by every user (mode \(String(info.st_mode & 0o777, radix: 8))); chmod o-w it") }
        let database = (directory as NSString).appendingPathComponent("tether.sqlite")
        if access(database, F_OK) == 0, access(database, R_OK | W_OK) != 0 {
            problems.append("data: \(database) is not writable (\(String(cString: strerror(errno))))")
        }
        return problems
    }

    /// A port below 1024 needs root or CAP_NET_BIND_SERVICE (which the unit grants by a drop-in).
    static func privilegedPortProblem(_ port: Int) -> String? {
        guard port > 0, port < 1024, geteuid() != 0, !hasEffectiveCapability(10) else { return nil }
        return "port: \(port) is privileged; grant CAP_NET_BIND_SERVICE (AmbientCapabilities, see OPERATIONS.md) or use a port from 1024"
    }

    /// Whether capability `number` is in this process's effective set (/proc/self/status).
    private static func hasEffectiveCapability(_ number: Int) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let mask = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
        return mask & (1 << UInt64(number)) != 0
    }
}
