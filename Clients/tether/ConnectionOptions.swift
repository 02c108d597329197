import ArgumentParser
import Foundation
import Logging
import TetherClient
import TetherJSON

/// How to reach the server. Every subcommand takes these; options that change how a connection
/// is made (a token, TLS trust, compression) belong here and are turned into `ClientOptions` in one place.
/// A flag beats its environment variable, which beats the default.
struct ConnectionOptions: ParsableArguments {
    static let defaultURL = "ws://127.0.0.1:8080"

    @Option(name: .long, help: ArgumentHelp("The server's WebSocket URL (ws:// or wss://); several, comma-separated, for the nodes of a cluster (the next is tried when one is lost). Default: $TETHER_URL, else \(defaultURL).", valueName: "urls"))
    var url: String?

    // Unconditional: "--timeout -1" is a (refused) number, not a missing value followed by a flag.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Seconds to wait for the server's hello (and, for `send`, the answer).", valueName: "seconds"))
    var timeout: Double = 10

    @Option(name: .long, help: "Log level on stderr for `watch`, `send` and headless mode (interactive screens never log).")
    var logLevel: Logger.Level = .critical

    @Option(name: .long, help: ArgumentHelp("An access token for servers started with --auth-secret (see `tetherd token`). Default: $TETHER_TOKEN. A token on the command line shows in `ps`: prefer --token-file or the environment.", valueName: "token"))
    var token: String?

    @Option(name: .long, help: ArgumentHelp("Read the access token from this file (surrounding whitespace is ignored).", valueName: "file"))
    var tokenFile: String?

    @Option(name: .long, help: ArgumentHelp("Trust this CA certificate (PEM) for a wss:// server, e.g. one from Scripts/make-cert.sh.", valueName: "pem-file"))
    var ca: String?

    @Flag(name: .long, help: "Accept any wss:// certificate (tests only: encrypted, not authenticated).")
    var insecure = false

    @Flag(name: .long, help: "Offer permessage-deflate: a server started with --compression on sends large frames (snapshots) compressed.")
    var compression = false

    @Option(name: .long, help: ArgumentHelp("Join with presence {\"name\": NAME}: others see you in rooms that keep presence, and you see who is there (`watch` prints the presence frames).", valueName: "name"))
    var name: String?

    /// The URL from --url, else $TETHER_URL, else the default.
    var resolvedURL: String {
        if let url { return url }
        if let url = Self.environment("TETHER_URL") { return url }
        return Self.defaultURL
    }

    /// The token from --token, else --token-file, else $TETHER_TOKEN; nil for none.
    func resolvedToken() throws -> String? {
        if let token { return token }
        if let tokenFile {
            let text: String
            do {
                text = try String(contentsOfFile: tokenFile, encoding: .utf8)
            } catch {
                throw ValidationError("cannot read the token file '\(tokenFile)': \((error as NSError).localizedDescription)")
            }
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { throw ValidationError("the token file '\(tokenFile)' is empty") }
            return trimmed
        }
        return Self.environment("TETHER_TOKEN")
    }

    /// A non-empty environment variable.
    static func environment(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// The client options these flags describe.
    func clientOptions(reconnect: Bool) throws -> ClientOptions {
        var options = ClientOptions(url: resolvedURL, token: try resolvedToken())
        options.reconnect.isEnabled = reconnect
        options.actionTimeout = timeoutDuration
        if let ca { options.trust = .caFile(ca) } else if insecure { options.trust = .insecure }
        options.compression = compression
        options.presence = name.map { ["name": .string($0)] }
        options.user = AnonymousIdentity.user(named: name)
        return options
    }

    var timeoutDuration: Duration { .milliseconds(Int(timeout * 1000)) }

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
        if ca != nil, insecure { throw ValidationError("--ca and --insecure don't go together") }
        if token != nil, tokenFile != nil { throw ValidationError("--token and --token-file don't go together") }
        if let name, name.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--name must not be empty") }
        _ = try resolvedToken()
    }
}
