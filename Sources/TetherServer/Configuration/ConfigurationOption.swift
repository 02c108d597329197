import Foundation
import TetherJSON
import Logging
import TetherTransport

/// One setting as the outside world names it: the flag `--KEY`, the environment variable
/// `TETHERD_KEY` (upper case, `-` as `_`) and the config file's `KEY`, all applied to one
/// `ServerConfiguration` field. Defaults are the field's own.
public struct ConfigurationOption: Sendable {
    /// "max-connections": `--max-connections`, `TETHERD_MAX_CONNECTIONS`, `max-connections:`.
    public let key: String
    /// What the value is ("n", "seconds", "path"); nil for a flag that takes no value.
    public let valueName: String?
    public let help: String
    /// Redacted in logs and error messages.
    public let isSecret: Bool
    /// Left out of `--help` (test switches).
    public let isHidden: Bool
    /// Whether a reload (SIGHUP) may change it while the server runs.
    public let isReloadable: Bool
    let apply: @Sendable (inout ServerConfiguration, String) throws(ConfigurationError) -> Void
    let current: @Sendable (ServerConfiguration) -> String?

    public static let environmentPrefix = "TETHERD_"

    public var flag: String { "--\(key)" }
    public var environmentName: String { Self.environmentPrefix + key.uppercased().replacingOccurrences(of: "-", with: "_") }
    public var isFlag: Bool { valueName == nil }

    /// The value as text in `configuration` (for help, the packaged config file, and reload
    /// reports); nil when unset.
    public func value(in configuration: ServerConfiguration) -> String? { current(configuration) }

    init(_ key: String, value valueName: String?, _ help: String, secret: Bool = false, hidden: Bool = false, reloadable: Bool = false,
         apply: @escaping @Sendable (inout ServerConfiguration, String) throws(ConfigurationError) -> Void,
         current: @escaping @Sendable (ServerConfiguration) -> String?) {
        self.key = key
        self.valueName = valueName
        self.help = help
        self.isSecret = secret
        self.isHidden = hidden
        self.isReloadable = reloadable
        self.apply = apply
        self.current = current
    }

    // MARK: Kinds of values

    static func string(_ key: String, _ field: WritableKeyPath<ServerConfiguration, String> & Sendable, _ help: String, value: String = "text") -> Self {
        Self(key, value: value, help, apply: { config, text in config[keyPath: field] = text }, current: { $0[keyPath: field] })
    }

    static func optionalString(_ key: String, _ field: WritableKeyPath<ServerConfiguration, String?> & Sendable, _ help: String,
                               value: String = "path", reloadable: Bool = false) -> Self {
        Self(key, value: value, help, reloadable: reloadable,
             apply: { config, text in config[keyPath: field] = text.isEmpty ? nil : text }, current: { $0[keyPath: field] })
    }

    static func integer(_ key: String, _ field: WritableKeyPath<ServerConfiguration, Int> & Sendable, _ help: String,
                        value: String = "n", range: ClosedRange<Int> = 1...Int.max, reloadable: Bool = false) -> Self {
        Self(key, value: value, help, reloadable: reloadable, apply: { config, text throws(ConfigurationError) in
            guard let number = Int(text.replacingOccurrences(of: "_", with: "")) else { throw .badValue(key, text, "an integer") }
            guard range.contains(number) else { throw .badValue(key, text, range.upperBound == .max ? "at least \(range.lowerBound)" : "from \(range.lowerBound) to \(range.upperBound)") }
            config[keyPath: field] = number
        }, current: { "\($0[keyPath: field])" })
    }

    static func number(_ key: String, _ field: WritableKeyPath<ServerConfiguration, Double> & Sendable, _ help: String, reloadable: Bool = false) -> Self {
        Self(key, value: "n", help, reloadable: reloadable, apply: { config, text throws(ConfigurationError) in
            guard let number = Double(text), number.isFinite, number > 0 else { throw .badValue(key, text, "a positive number") }
            config[keyPath: field] = number
        }, current: { config in
            let value = config[keyPath: field]
            return value == value.rounded() ? "\(Int(value))" : "\(value)"
        })
    }

    static func seconds(_ key: String, _ field: WritableKeyPath<ServerConfiguration, Duration> & Sendable, _ help: String,
                        allowsZero: Bool = false, reloadable: Bool = false) -> Self {
        Self(key, value: "seconds", help, reloadable: reloadable, apply: { config, text throws(ConfigurationError) in
            guard let seconds = Double(text), seconds.isFinite, seconds > 0 || (allowsZero && seconds == 0) else {
                throw .badValue(key, text, allowsZero ? "0 or a positive number of seconds" : "a positive number of seconds")
            }
            config[keyPath: field] = .milliseconds(Int64(seconds * 1000))
        }, current: { config in
            let components = config[keyPath: field].components
            return components.attoseconds == 0 ? "\(components.seconds)" : "\(Double(components.seconds) + Double(components.attoseconds) / 1e18)"
        })
    }

    static func flag(_ key: String, _ field: WritableKeyPath<ServerConfiguration, Bool> & Sendable, _ help: String) -> Self {
        Self(key, value: nil, help, apply: { config, text throws(ConfigurationError) in
            switch text.lowercased() {
            case "true", "1", "yes", "on": config[keyPath: field] = true
            case "false", "0", "no", "off": config[keyPath: field] = false
            default: throw .badValue(key, text, "true or false")
            }
        }, current: { "\($0[keyPath: field])" })
    }

    static func choice<Value: RawRepresentable & CaseIterable & Sendable>(
        _ key: String, _ field: WritableKeyPath<ServerConfiguration, Value> & Sendable, _ help: String, reloadable: Bool = false
    ) -> Self where Value.RawValue == String {
        let names = Value.allCases.map(\.rawValue)
        // YAML reads `on` and `off` as booleans: for an on/off setting they mean on and off.
        let booleans = Set(names) == ["on", "off"] ? ["true": "on", "false": "off"] : [:]
        return Self(key, value: names.joined(separator: "|"), help, reloadable: reloadable, apply: { config, text throws(ConfigurationError) in
            guard let value = Value(rawValue: booleans[text.lowercased()] ?? text) else { throw .badValue(key, text, "one of \(names.joined(separator: ", "))") }
            config[keyPath: field] = value
        }, current: { $0[keyPath: field].rawValue })
    }
}

/// `--room-expiry todo=30d,bench=12h,vote=never`: kind names and ages.
enum RoomExpirySetting {
    private static let units: [(suffix: Character, seconds: Int64)] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)]

    static func parse(_ text: String) throws(ConfigurationError) -> [String: Duration] {
        var expiry: [String: Duration] = [:]
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else { throw .badValue("room-expiry", text, "kind=age pairs, e.g. todo=30d,bench=12h") }
            guard let age = age(parts[1]) else { throw .badValue("room-expiry", text, "ages such as 30d, 12h, 90m, 45s or never (in \(item))") }
            expiry[parts[0]] = age
        }
        return expiry
    }

    /// "30d" and the like; `.zero` for never.
    private static func age(_ text: String) -> Duration? {
        if text == "never" || text == "0" { return .zero }
        guard let unit = units.first(where: { text.last == $0.suffix }), let count = Int64(text.dropLast()), count > 0 else { return nil }
        return .seconds(count * unit.seconds)
    }

    static func format(_ expiry: [String: Duration]) -> String {
        expiry.keys.sorted().map { "\($0)=\(text(expiry[$0]!))" }.joined(separator: ",")
    }

    /// "30d", "12h", "90m"; "never" for zero.
    static func text(_ age: Duration) -> String {
        let seconds = age.components.seconds
        guard seconds > 0 else { return "never" }
        let unit = units.first { seconds % $0.seconds == 0 }!
        return "\(seconds / unit.seconds)\(unit.suffix)"
    }
}

extension ServerConfiguration {
    /// Every setting, in the order `tetherd --help` lists them.
    public static let options: [ConfigurationOption] = [
        .string("host", \.host, "Address to listen on; beyond loopback it needs --auth-secret (or --allow-anonymous).", value: "address"),
        .integer("port", \.port, "Port to listen on; 0 picks a free one (printed on start).", value: "port", range: 0...65_535),
        .choice("log-level", \.logLevel, "Log level.", reloadable: true),
        .choice("log-format", \.logFormat, "Log lines as text, or one JSON object per line for log collectors."),
        .optionalString("data", \.dataDirectory, "Directory for durable shared rooms (SQLite); created if missing; locked while the daemon runs."),
        ConfigurationOption("memory-only", value: nil, "Keep rooms in memory only: nothing survives a restart.", apply: { config, text throws(ConfigurationError) in
            let on = ["true", "1", "yes", "on"].contains(text.lowercased())
            guard on || ["false", "0", "no", "off"].contains(text.lowercased()) else { throw .badValue("memory-only", text, "true or false") }
            if on { config.dataDirectory = nil }
        }, current: { "\($0.dataDirectory == nil)" }),
        .choice("durability", \.durability, "What an ack promises: strict (fsynced), batch (survives a daemon crash), none (may lose recent acks)."),
        .integer("max-state-bytes", \.maxStateBytes, "Largest encoded state of a room and largest patch of one turn; a turn past it is refused with too_large.", value: "bytes", range: 64...Int.max),
        .integer("max-presence-members", \.maxPresenceMembers, "Members one room's presence lists (per node on a cluster); past it a join's presence is ignored. Each arrival is a frame to every member.", value: "members", range: 0...Int.max),
        .seconds("presence-window-seconds", \.presenceWindow, "Presence changes within this window go to members as one presence_patch (0: each at once).", allowsZero: true),
        .integer("history-max-patches", \.historyMaxPatches, "Per room: recent patches kept for resuming clients.", range: 0...Int.max),
        .integer("history-max-bytes", \.historyMaxBytes, "Per room: bytes of recent patches kept for resuming clients.", value: "bytes", range: 0...Int.max),
        .integer("max-frame-bytes", \.maxFrameBytes, "Largest frame accepted from a client; larger ones close the connection with 1009.", value: "bytes", range: 64...Int.max),
        .integer("max-connections", \.maxConnections, "Simultaneous connections."),
        .integer("io-threads", \.ioThreads, "Socket threads, each serving a share of the connections; 0 (the default): one per core the daemon may use, at most 16. 1 serves every socket on one thread.", value: "n", range: 0...64),
        ConfigurationOption("max-connections-per-ip", value: "n", "Simultaneous connections from one IP address; 0 (the default): no bound but --max-connections, since a load balancer or NAT puts many clients behind one address.", reloadable: true, apply: { config, text throws(ConfigurationError) in
            guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number >= 0 else { throw .badValue("max-connections-per-ip", text, "0 or more") }
            config.maxConnectionsPerIP = number == 0 ? nil : number
        }, current: { "\($0.maxConnectionsPerIP ?? 0)" }),
        .integer("send-queue-bytes", \.sendQueueBytes, "Per connection: queued bytes before a slow client's patches are replaced by a snapshot.", value: "bytes", range: 1024...Int.max),
        .seconds("idle-room-seconds", \.idleRoomTimeout, "A shared room with no subscribers leaves memory after this (its history stays on disk)."),
        .seconds("stuck-client-seconds", \.stuckClientTimeout, "A client whose queue makes no progress this long is closed with 1008.", reloadable: true),
        .optionalString("tls-cert", \.tlsCertificatePath, "TLS certificate chain (PEM) to serve wss:// (with --tls-key).", reloadable: true),
        .optionalString("tls-key", \.tlsKeyPath, "TLS private key (PEM).", reloadable: true),
        ConfigurationOption("auth-secret", value: "secret", "Shared secret for HS256 access tokens without a kid; joins then need a valid token. Visible in ps: prefer --auth-secret-file.", secret: true, reloadable: true, apply: { config, text in
            guard !text.isEmpty else { return }
            config.auth = (config.auth ?? TokenAuthority(secret: nil, named: [:])).adding(TokenAuthority(secret: Array(text.utf8)))
        }, current: { $0.auth?.hasUnnamedSecret == true ? "<secret>" : nil }),
        ConfigurationOption("auth-secret-file", value: "path", "File holding the token secret (for tokens without a kid).", reloadable: true, apply: { config, path throws(ConfigurationError) in
            guard let contents = FileManager.default.contents(atPath: path) else { throw .unreadable("auth-secret-file", path) }
            let secret = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else { throw .badValue("auth-secret-file", path, "a file holding the secret, not an empty one") }
            config.auth = (config.auth ?? TokenAuthority(secret: nil, named: [:])).adding(TokenAuthority(secret: Array(secret.utf8)))
            config.authSecretFile = path
        }, current: { $0.authSecretFile }),
        ConfigurationOption("auth-secrets-file", value: "path", "File of named token secrets, one `kid: secret` line each; a token's kid header picks its secret. Rotate by adding a secret, moving token issuers to it, then removing the old one (each a reload).", reloadable: true, apply: { config, path throws(ConfigurationError) in
            let named = try TokenSecretsFile.read(path)
            config.auth = (config.auth ?? TokenAuthority(secret: nil, named: [:])).adding(TokenAuthority(secret: nil, named: named))
            config.authSecretsFile = path
        }, current: { $0.authSecretsFile }),
        ConfigurationOption("webhooks", value: "list", "Webhook endpoints, in the config file as a list (docs/WEBHOOKS.md): name, url, secret-file, events, rooms, arguments, timeout, retry-for.", hidden: true, reloadable: true, apply: { config, text throws(ConfigurationError) in
            guard let list = try? JSONParser().parse(Array(text.utf8)) else { throw .badValue("webhooks", text, "a list of endpoints") }
            do throws(WebhookConfigurationError) {
                config.webhooks = try WebhookEndpoint.parse(list)
            } catch {
                throw .invalid(error.description)
            }
            config.webhooksText = text
        }, current: { $0.webhooksText }),
        .optionalString("jwks-url", \.jwksURL, "An identity provider's key set (JWKS, https://): its RS256, ES256 and EdDSA tokens are accepted too. Fetched at start, every --jwks-refresh, and on a token with an unknown kid. Needs --token-issuer.", value: "url"),
        .optionalString("token-issuer", \.tokenIssuer, "The identity provider's issuer: its tokens' exact iss (e.g. https://auth.example.com/realms/app). Only tokens with this iss are checked with the --jwks-url keys.", value: "issuer"),
        .optionalString("token-audience", \.tokenAudience, "When set, an identity provider's token must name this audience in its aud claim (e.g. the API identifier or client id).", value: "audience"),
        .seconds("token-leeway", \.tokenLeeway, "Tolerance for clocks apart on a token's exp, nbf and iat.", allowsZero: true),
        .seconds("jwks-refresh", \.jwksRefresh, "How often the identity provider's key set is fetched again (a key removed from it is refused from then on)."),
        .seconds("jwks-min-refresh", \.jwksMinRefresh, "At most one extra fetch of the key set per this many seconds, asked for by tokens with an unknown kid.", allowsZero: true),
        .flag("allow-anonymous", \.allowAnonymous, "Allow listening on a non-loopback address without a token secret."),
        ConfigurationOption("allowed-origins", value: "origins", "Web pages that may open WebSockets besides the daemon's own (the dashboard): comma-separated origins such as https://app.example.com,http://localhost:3000, or * for any page of any site. Browsers' upgrades from other origins get 403; programs, which send no Origin, are unaffected.", apply: { config, text throws(ConfigurationError) in
            do throws(OriginPolicyError) {
                config.allowedOrigins = try OriginPolicy(allowing: text.split(separator: ",").map(String.init))
            } catch {
                throw .invalid("allowed-origins: \(error.description)")
            }
        }, current: { $0.allowedOrigins.entries.isEmpty ? nil : $0.allowedOrigins.entries.joined(separator: ",") }),
        .number("max-actions-per-second", \.maxActionsPerSecond, "Per connection: actions per second (token bucket; excess gets rate_limited).", reloadable: true),
        .integer("action-burst", \.actionBurst, "Per connection: the token bucket's burst size.", reloadable: true),
        .integer("max-rooms-per-connection", \.maxRoomsPerConnection, "Rooms one connection may join at once.", reloadable: true),
        .integer("max-rooms", \.maxRooms, "Live rooms in the whole server (shared and per-session).", reloadable: true),
        .integer("max-rooms-per-kind", \.maxRoomsPerKind, "Shared rooms of one kind, in memory or stored; past it a new instance is refused with rate_limited (existing ones keep working).", reloadable: true),
        ConfigurationOption("room-expiry", value: "kind=age,...", "Delete a shared kind's rooms that have not changed and had no subscribers for this long, e.g. todo=30d,bench=12h (units s, m, h, d; never turns a kind's own expiry off). Checked once a minute.", reloadable: true, apply: { config, text throws(ConfigurationError) in
            config.roomExpiry = try RoomExpirySetting.parse(text)
        }, current: { $0.roomExpiry.isEmpty ? nil : RoomExpirySetting.format($0.roomExpiry) }),
        .choice("compression", \.compression, "permessage-deflate for clients that offer it: each frame of at least --compression-min-bytes is compressed once and sent as is to every client that negotiated it."),
        .integer("compression-min-bytes", \.compressionMinBytes, "Smallest frame compressed when --compression is on (smaller ones gain too little for the work).", value: "bytes", range: 0...Int.max),
        .seconds("handshake-timeout-seconds", \.handshakeTimeout, "Time to complete the WebSocket handshake."),
        ConfigurationOption("nats", value: "urls", "Join a cluster: comma-separated NATS server URLs (JetStream on). Rooms then live in the cluster, not in --data.", apply: { config, text in
            config.natsURLs = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }, current: { $0.natsURLs.isEmpty ? nil : $0.natsURLs.joined(separator: ",") }),
        ConfigurationOption("nats-monitoring", value: "urls", "The NATS servers' monitoring endpoints (http://host:8222,...): tetherd reads each /varz at start (and tetherd check does) and warns when JetStream does not fsync every write before its ack (sync_interval: always).", apply: { config, text in
            config.natsMonitoringURLs = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }, current: { $0.natsMonitoringURLs.isEmpty ? nil : $0.natsMonitoringURLs.joined(separator: ",") }),
        .optionalString("node", \.nodeName, "This node's name in the cluster (unique; default: host name and a random suffix).", value: "name"),
        .integer("nats-replicas", \.clusterReplicas, "Replicas of the cluster's streams and buckets (at most the number of NATS servers).", range: 1...5),
        .integer("nats-streams", \.clusterStreams, "JetStream streams the rooms' logs are spread over.", range: 1...64),
        .seconds("lease-seconds", \.ownershipLease, "How long a room's owner keeps it without renewing: the failover time after a node dies."),
        .seconds("ping-seconds", \.pingInterval, "Silence after which the server pings a peer."),
        .seconds("peer-timeout-seconds", \.peerTimeout, "Silence after which a peer counts as dead and is dropped."),
    ]
}
