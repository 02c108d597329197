import Foundation
import TetherProtocol

/// Who `tether` says it is to a server without tokens (the `user` of its hello): one random id
/// per account on this machine and `--name`, kept in `$XDG_STATE_HOME/tether/users.json`
/// (default `~/.local/state/tether/`). So `tether --name kim vote` is the same voter after a
/// restart, and five `tether send`s are one person. A claim, not authentication: with tokens the
/// server goes by the token instead.
enum AnonymousIdentity {
    /// The id for `name` (nil: no --name), created and stored on first use; a fresh one for this
    /// run alone when the file cannot be read or written.
    static func user(named name: String?) -> String {
        let key = name ?? ""
        let file = directory.appendingPathComponent("users.json")
        var users = (try? JSONSerialization.jsonObject(with: Data(contentsOf: file))) as? [String: String] ?? [:]
        if let known = users[key], ClientMessage.isIdentity(known) { return known }
        let created = ClientMessage.makeClientID()
        users[key] = created
        if let data = try? JSONSerialization.data(withJSONObject: users, options: [.sortedKeys]) {
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try? data.write(to: file, options: .atomic)
        }
        return created
    }

    static var directory: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() + "/.local/state")
        return URL(fileURLWithPath: base).appendingPathComponent("tether")
    }
}
