import Foundation
import Logging
import TetherProtocol
import TetherTransport

/// Every setting of the server, with its default: the single source. `tetherd` reads the same
/// settings from flags, environment variables and a config file (`ServerConfiguration.options`
/// and `ConfigurationLoader`); a program embedding Tether sets these fields directly.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 lets the OS pick a free port; `TetherServer.start()` returns the one bound.
    public var port = 8080
    /// For tests of clients that resend (`TETHERD_TEST_WITHHOLD_ACKS=1`, never an option): acks
    /// of applied actions are not sent, as if each were lost with the connection.
    public var withholdsAcksForTests = false
    /// A larger frame closes the connection with 1009.
    public var maxFrameBytes = 1 << 20
    public var maxConnections = 10_000
    /// Per room: how many recent patches are kept for resuming clients, and how many bytes.
    public var historyMaxPatches = 1_000
    public var historyMaxBytes = 1 << 20
    /// Largest encoded room state, and largest patch of one turn; a turn past it is refused with
    /// `too_large` and changes nothing. The default keeps every frame under 1 MiB, the limit many
    /// WebSocket clients apply by default.
    public var maxStateBytes = 1_000_000
    /// Per connection: queued bytes before a room's patches are dropped for a fresh snapshot.
    public var sendQueueBytes = 512 << 10
    /// Largest merged patch (its operations) built from a connection's queued patches.
    public var maxMergedPatchBytes = 256 << 10
    /// A shared room with no subscribers is dropped after this long.
    public var idleRoomTimeout: Duration = .seconds(60)
    /// A client whose queue made no progress for this long is closed with 1008.
    public var stuckClientTimeout: Duration = .seconds(60)
    /// A client sending this many invalid messages in a row is closed with 1008.
    public var maxConsecutiveErrors = 50
    /// WebSocket ping interval and the silence after which a peer counts as dead.
    public var pingInterval: Duration = .seconds(20)
    public var peerTimeout: Duration = .seconds(60)
    public var handshakeTimeout: Duration = .seconds(10)
    /// Graceful shutdown: how long queued messages may take to drain before clients are closed.
    public var shutdownGracePeriod: Duration = .seconds(5)
    /// Certificate chain and private key (PEM) to serve `wss://`; both or neither.
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    /// Where shared rooms are kept (SQLite); nil keeps everything in memory only.
    public var dataDirectory: String? = "data"
    public var durability: Durability = .batch
    public var serverName = "tetherd/\(TetherServer.version)"
    /// When set, every join needs a token signed with this authority that covers the room.
    public var auth: TokenAuthority?
    /// The files `auth` was read from, if any (for `tetherd check` and reload reports).
    public var authSecretFile: String?
    public var authSecretsFile: String?
    /// An identity provider whose tokens are accepted too: where its key set is (a JWKS URL),
    /// its tokens' `iss`, and the `aud` they must name (optional). URL and issuer go together.
    public var jwksURL: String?
    public var tokenIssuer: String?
    public var tokenAudience: String?
    /// How often the key set is fetched again, and the least time between two fetches asked for
    /// by tokens with an unknown `kid`.
    public var jwksRefresh: Duration = .seconds(600)
    public var jwksMinRefresh: Duration = .seconds(30)
    /// The provider's keys as fetched; made by `TetherServer` when `identityProvider` is set.
    public var identityKeys: IdentityKeys?
    /// Tolerance for clocks apart on a token's `exp`, `nbf` and `iat`.
    public var tokenLeeway: Duration = .seconds(30)
    /// Webhook endpoints (config file only: `webhooks:`, docs/WEBHOOKS.md).
    public var webhooks: [WebhookEndpoint] = []
    /// The `webhooks:` value as read, for `tetherd check` and reload reports.
    public var webhooksText: String?
    /// Listen beyond loopback without `auth` (refused otherwise: anyone could join every room).
    public var allowAnonymous = false
    /// Web pages that may open a WebSocket besides the daemon's own (checked on the upgrade's
    /// `Origin`; clients that send none, i.e. programs, are unaffected).
    public var allowedOrigins: OriginPolicy = .ownOriginOnly
    /// Per connection: a token bucket of actions (answered `rate_limited` when empty).
    public var maxActionsPerSecond = 1_000.0
    public var actionBurst = 1_000
    /// Rooms one connection may have joined at once, and live rooms in the whole server.
    public var maxRoomsPerConnection = 100
    public var maxRooms = 10_000
    /// Shared rooms of one kind, live or stored: past it a new instance is refused with
    /// `rate_limited` (existing ones keep working), so no client can fill the disk with rooms.
    public var maxRoomsPerKind = 10_000
    /// Per kind name: how long a shared room that has not changed and has no subscribers is kept
    /// before it is deleted; overrides the kind's own `expireAfter` (`.zero`: never).
    public var roomExpiry: [String: Duration] = [:]
    /// Connections from one address. Off by default (nil: only `maxConnections` applies): a load
    /// balancer, a reverse proxy or a NAT puts every client behind one address, and a per-address
    /// bound would refuse them once that address reaches it. Set it on a daemon that faces
    /// clients directly, where one address holding thousands of connections is a misbehaving
    /// client.
    public var maxConnectionsPerIP: Int?
    /// Socket shards: threads that each serve a share of the connections (0: one per core this
    /// process may use, at most 16). 1 serves every socket on one thread.
    public var ioThreads = 0
    /// `ioThreads` with 0 resolved for this machine.
    public var effectiveIOThreads: Int { ioThreads > 0 ? ioThreads : min(16, usableCores()) }
    /// permessage-deflate for clients that offer it (browsers do): a frame of at least
    /// `compressionMinBytes` is compressed once, by its room, and the same bytes go to every
    /// subscriber that negotiated compression; others get the plain frame.
    public var compression: Compression = .off
    public var compressionMinBytes = 1_024
    /// NATS servers of a cluster (`nats://host:port`); empty runs a single node on `dataDirectory`.
    public var natsURLs: [String] = []
    /// The NATS servers' monitoring endpoints (`http://host:8222`): tetherd reads their `/varz`
    /// to tell whether JetStream fsyncs each write before its ack (Cluster/NATSDurability.swift).
    public var natsMonitoringURLs: [String] = []
    /// This node's name in the cluster; nil makes one from the host name and a random suffix.
    public var nodeName: String?
    /// Replicas of every cluster stream and bucket (3 for a three-server NATS cluster).
    public var clusterReplicas = 3
    /// How many JetStream streams hold the rooms' logs (rooms are spread over them by name).
    public var clusterStreams = 4
    /// How long a room's ownership lasts without being renewed: the failover time after a node dies.
    public var ownershipLease: Duration = .seconds(3)
    public var logLevel: Logger.Level = .info
    public var logFormat: LogFormat = .text
    /// Members one room's presence lists; past it a join's presence is ignored (not listed, no
    /// stream). Each arrival is a frame to every member, so a join storm costs members² frames.
    public var maxPresenceMembers = 1_000
    /// Presence changes are gathered this long and sent as one `presence_patch`: with many
    /// members coming and going, each member gets one frame per window, not one per change.
    /// 250 ms: at 50 rejoins a second among 1,000 members, room patches' p99 was 1.4× that of
    /// the same churn without presence, against 2.3× at 100 ms and 4.3× at 50 ms
    /// (docs/PERFORMANCE.md); people don't notice a name appearing a quarter second late.
    /// Zero sends each change at once.
    public var presenceWindow: Duration = .milliseconds(250)

    public init() {}

    /// The TLS files, when both are set.
    public var tls: TLSFiles? {
        guard let tlsCertificatePath, let tlsKeyPath else { return nil }
        return TLSFiles(certificatePath: tlsCertificatePath, privateKeyPath: tlsKeyPath)
    }

    /// Frames this large or larger are compressed (when compression is on).
    var compressionThreshold: Int? { compression == .on ? compressionMinBytes : nil }

    /// The URL scheme clients use.
    public var scheme: String { tls == nil ? "ws" : "wss" }
}

/// Whether the server offers permessage-deflate.
public enum Compression: String, Sendable, CaseIterable {
    case off
    case on
}

/// How log lines are written: for people, or one JSON object per line for log collectors.
public enum LogFormat: String, Sendable, CaseIterable {
    case text
    case json
}

extension ServerConfiguration {
    /// The transport's part of the settings.
    var transportConfiguration: WebSocketServerConfiguration {
        var transport = WebSocketServerConfiguration()
        transport.host = host
        transport.port = port
        transport.subprotocol = TetherProtocol.subprotocol
        transport.maxMessageBytes = maxFrameBytes
        transport.maxConnections = maxConnections
        transport.tls = tls
        transport.pingInterval = pingInterval
        transport.idleTimeout = peerTimeout
        transport.handshakeTimeout = handshakeTimeout
        transport.compression = compression == .on
        transport.allowedOrigins = allowedOrigins
        transport.ioThreads = effectiveIOThreads
        return transport
    }

    /// One line for the start-up log: what an operator wants to confirm.
    /// The identity provider, when `jwksURL` and `tokenIssuer` are both set.
    public var identityProvider: IdentityProvider? {
        guard let jwksURL, let tokenIssuer, let url = URL(string: jwksURL) else { return nil }
        return IdentityProvider(jwksURL: url, issuer: tokenIssuer, audience: tokenAudience, refresh: jwksRefresh, minRefreshInterval: jwksMinRefresh)
    }

    /// Whether joins need a token: with token secrets, or an identity provider.
    public var requiresTokens: Bool { auth != nil || identityProvider != nil }

    /// Checks tokens with this server's secrets and its identity provider's keys.
    public var tokenVerifier: TokenVerifier {
        TokenVerifier(secrets: auth, provider: identityProvider, providerKeys: identityKeys, leeway: Int(tokenLeeway.components.seconds))
    }

    public func summary(port: Int) -> String {
        let storage = !natsURLs.isEmpty ? "cluster node \(nodeName ?? "?") on NATS \(natsURLs.joined(separator: ","))"
            : dataDirectory.map { "data in \($0) (durability \(durability.rawValue))" } ?? "memory only"
        return "\(scheme)://\(host):\(port), \(storage), auth \(requiresTokens ? "on" : "off")\(identityProvider.map { ", identity provider \($0.issuer)" } ?? ""), "
            + "\(effectiveIOThreads) socket thread\(effectiveIOThreads == 1 ? "" : "s"), max \(maxConnections) connections, \(maxRooms) rooms, state \(maxStateBytes) bytes, log \(logLevel) \(logFormat.rawValue)"
    }
}

/// The cores this process may run on: its CPU affinity (as `taskset` or a cpuset sets it), read
/// from /proc, else the cores online.
func usableCores() -> Int {
    let online = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else { return online }
    var count = 0
    for range in line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces).split(separator: ",") {
        let bounds = range.split(separator: "-").compactMap { Int($0) }
        if bounds.count == 2, bounds[1] >= bounds[0] { count += bounds[1] - bounds[0] + 1 } else if bounds.count == 1 { count += 1 }
    }
    return count > 0 ? count : online
}
