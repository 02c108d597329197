import Foundation
import Testing
import TetherDemos
import TetherProtocol
import TetherServer
import TetherTesting

/// What a reload may change, and the hub applying it with clients connected.
@Suite("Reload")
struct ReloadTests {
    /// A value different from the default for every option (a new option fails the test until
    /// it gets one here, so its `reloadable` mark is checked too).
    static func changedValues(files directory: String) throws -> [String: [String]] {
        let secret = directory + "/secret", secrets = directory + "/secrets.yaml"
        try "s3cret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        try "k1: \"named secret\"\n".write(toFile: secrets, atomically: true, encoding: .utf8)
        return [
            "host": ["--host", "127.0.0.2"], "port": ["--port", "9999"], "log-level": ["--log-level", "debug"],
            "log-format": ["--log-format", "json"], "data": ["--data", "/tmp/elsewhere"], "memory-only": ["--memory-only"],
            "durability": ["--durability", "strict"], "max-state-bytes": ["--max-state-bytes", "5000"],
            "max-presence-members": ["--max-presence-members", "10"], "presence-window-seconds": ["--presence-window-seconds", "0"],
            "history-max-patches": ["--history-max-patches", "7"], "history-max-bytes": ["--history-max-bytes", "777"],
            "max-frame-bytes": ["--max-frame-bytes", "4096"], "max-connections": ["--max-connections", "77"],
            "max-connections-per-ip": ["--max-connections-per-ip", "5"], "send-queue-bytes": ["--send-queue-bytes", "2048"],
            "idle-room-seconds": ["--idle-room-seconds", "3"], "stuck-client-seconds": ["--stuck-client-seconds", "4"],
            "tls-cert": ["--tls-cert", "/new/cert.pem", "--tls-key", "/new/key.pem"],
            "tls-key": ["--tls-cert", "/new/cert.pem", "--tls-key", "/new/key.pem"],
            "auth-secret": ["--auth-secret", "other"], "auth-secret-file": ["--auth-secret-file", secret],
            "auth-secrets-file": ["--auth-secrets-file", secrets], "allow-anonymous": ["--allow-anonymous"],
            "jwks-url": ["--jwks-url", "https://idp.example.com/jwks", "--token-issuer", "https://idp.example.com"],
            "token-issuer": ["--jwks-url", "https://idp.example.com/jwks", "--token-issuer", "https://idp.example.com"],
            "token-audience": ["--jwks-url", "https://idp.example.com/jwks", "--token-issuer", "https://idp.example.com", "--token-audience", "tether"],
            "token-leeway": ["--token-leeway", "5"], "jwks-refresh": ["--jwks-refresh", "60"], "jwks-min-refresh": ["--jwks-min-refresh", "5"],
            "allowed-origins": ["--allowed-origins", "https://app.example.com"],
            "max-actions-per-second": ["--max-actions-per-second", "3"], "action-burst": ["--action-burst", "4"],
            "max-rooms-per-connection": ["--max-rooms-per-connection", "2"], "max-rooms": ["--max-rooms", "9"],
            "max-rooms-per-kind": ["--max-rooms-per-kind", "8"], "room-expiry": ["--room-expiry", "todo=30d"],
            "handshake-timeout-seconds": ["--handshake-timeout-seconds", "3"], "ping-seconds": ["--ping-seconds", "7"],
            "peer-timeout-seconds": ["--peer-timeout-seconds", "70"], "io-threads": ["--io-threads", "3"],
            "compression": ["--compression", "on"], "compression-min-bytes": ["--compression-min-bytes", "99"],
            "nats": ["--nats", "nats://127.0.0.9:4222"], "nats-monitoring": ["--nats-monitoring", "http://127.0.0.9:8222"], "node": ["--node", "other"], "nats-replicas": ["--nats-replicas", "1"],
            "nats-streams": ["--nats-streams", "2"], "lease-seconds": ["--lease-seconds", "9"],
        ]
    }

    @Test func exactlyTheReloadableSettingsChange() async throws {
        let directory = NSTemporaryDirectory() + "tether-reload-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let changed = try Self.changedValues(files: directory)
        let base = ["--tls-cert", "/old/cert.pem", "--tls-key", "/old/key.pem"]
        let running = try ConfigurationLoader().load(arguments: base, environment: [:]).configuration
        for option in ServerConfiguration.options where !option.isHidden {
            let arguments = try #require(changed[option.key], "no changed value for \(option.key): add one above")
            let tlsArguments = option.key.hasPrefix("tls-") ? [] : base
            let new = try ConfigurationLoader().load(arguments: tlsArguments + arguments, environment: [:]).configuration
            #expect(option.value(in: new) != option.value(in: running), "\(option.key): the test value differs")
            let effective = running.reloading(from: new)
            if option.isReloadable {
                #expect(option.value(in: effective) == option.value(in: new), "\(option.key) is reloadable: reload takes it")
            } else {
                #expect(option.value(in: effective) == option.value(in: running), "\(option.key) needs a restart: reload keeps it")
            }
        }
    }

    @Test func theReportSaysWhatChangedAndWhatWaits() async throws {
        let running = try ConfigurationLoader().load(arguments: [], environment: [:]).configuration
        let new = try ConfigurationLoader().load(arguments: ["--max-rooms", "9", "--port", "9999", "--auth-secret", "x"], environment: [:]).configuration
        let effective = running.reloading(from: new)
        #expect(effective.maxRooms == 9 && effective.port == running.port && effective.auth == new.auth)
        // Turning TLS on needs a restart.
        let withTLS = try ConfigurationLoader().load(arguments: ["--tls-cert", "c", "--tls-key", "k"], environment: [:]).configuration
        #expect(running.reloading(from: withTLS).tls == nil)
    }

    @Test func theHubAppliesLimitsAndSecretsWithClientsConnected() async throws {
        let old = TokenAuthority(secret: nil, named: ["old": Array("old secret".utf8)])
        let new = TokenAuthority(secret: nil, named: ["new": Array("new secret".utf8)])
        var configuration = TestServer.defaultConfiguration
        configuration.auth = old
        let server = TestServer(configuration: configuration, kinds: Demos.kinds)
        let claims = AccessClaims(subject: "t", expires: server.clock.secondsSince1970 + 3600, rooms: ["*"])
        let oldToken = try #require(await old.mint(claims, kid: "old"))
        let newToken = try #require(await new.mint(claims, kid: "new"))

        let alice = server.connect()
        _ = alice.receiveAll()
        alice.send(.join(room: "counter", id: 1, token: oldToken))
        #expect(alice.receiveAll().map(\.type) == ["snapshot", "ack"])

        // First reload: both secrets, and at most one room per connection.
        var both = configuration
        both.auth = old.adding(new)
        both.maxRoomsPerConnection = 1
        server.reconfigure(both)
        alice.send(.join(room: "clock", id: 2, token: newToken))
        #expect(alice.receiveAll().last?.error?.code == .rateLimited, "the new limit applies to a connected client")
        let bob = server.connect()
        _ = bob.receiveAll()
        bob.send(.join(room: "counter", id: 1, token: newToken))
        #expect(bob.receiveAll().map(\.type) == ["snapshot", "ack"])

        // Second reload: the old secret is gone.
        var rotated = both
        rotated.auth = new
        server.reconfigure(rotated)
        let carol = server.connect()
        _ = carol.receiveAll()
        carol.send(.join(room: "counter", id: 1, token: oldToken))
        #expect(carol.receiveAll().last?.error?.code == .unauthorized, "a token of the removed secret is refused")
        // Alice joined with the old secret before: she stays, and may still act.
        alice.send(.action(room: "counter", name: "increment", args: nil, id: 3))
        #expect(alice.receiveAll().last?.type == "ack")
        #expect(alice.connection.isOpen && bob.connection.isOpen)
    }
}
