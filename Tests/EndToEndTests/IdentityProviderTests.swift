import Foundation
import Testing
import TetherJSON
import TetherServer
import TetherTestSupport

/// A real tetherd trusting a real identity provider (Tests/HTTP/jwks_server.py: PyJWT keys, its
/// JWKS over HTTP, tokens minted on request) beside its own HS256 secret.
@Suite("End to end: tokens from an identity provider (JWKS)", .serialized)
struct IdentityProviderTests {
    static let audience = "tether"

    static func daemon(_ idp: IdentityProviderServer, _ extra: [String] = []) throws -> Daemon {
        try Daemon(arguments: ["--auth-secret", "s3cret", "--jwks-url", idp.jwksURL, "--token-issuer", idp.issuer,
                               "--token-audience", audience] + extra)
    }

    static func connect(_ daemon: Daemon) throws -> RawWebSocket {
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        return socket
    }

    /// The first error, snapshot or ack that answers `message`.
    static func answer(_ socket: RawWebSocket, _ message: JSON) throws -> JSON {
        try socket.send(json: message)
        return try socket.receiveJSON(until: { $0["type"] == "error" || $0["type"] == "snapshot" || $0["type"] == "ack" })
    }

    static func join(_ socket: RawWebSocket, _ token: String, room: String = "counter") throws -> JSON {
        try answer(socket, ["type": "join", "room": .string(room), "token": .string(token)])
    }

    /// A token of `idp` for the counter, for this server's audience unless `claims` say otherwise.
    static func token(_ idp: IdentityProviderServer, kid: String = "rsa-1", _ claims: [String: JSON] = [:]) throws -> String {
        try idp.mint(["kid": .string(kid), "rooms": ["counter"], "aud": .string(audience)].merging(claims) { _, new in new })
    }

    /// Waits for the daemon's first fetch (it serves before its keys land), without sending a
    /// token that would spend the unknown-kid refresh.
    static func waitForKeys(_ idp: IdentityProviderServer) throws {
        try waitUntil("the first JWKS fetch") { try idp.fetches() >= 1 }
        Thread.sleep(forTimeInterval: 0.5)
    }

    /// Joins with `token` until it is accepted (or `timeout`); the last answer.
    static func joinEventually(_ socket: RawWebSocket, _ token: () throws -> String, timeout: Duration = .seconds(20)) throws -> JSON {
        let deadline = ContinuousClock.now + timeout
        var last = try join(socket, try token())
        while last["type"] != "snapshot", ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.25)
            last = try join(socket, try token())
        }
        return last
    }

    static func hsToken(_ arguments: [String]) throws -> String {
        let run = try Daemon.runToExit(["token", "--secret", "s3cret"] + arguments)
        #expect(run.status == 0, "\(run.stderr)")
        return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func rs256ES256AndEdDSATokensJoinAndAct() throws {
        let idp = try IdentityProviderServer()
        defer { idp.stop() }
        let daemon = try Self.daemon(idp)
        defer { daemon.stop() }
        try Self.waitForKeys(idp)
        let socket = try Self.connect(daemon)
        for (index, kid) in ["rsa-1", "ec-1", "ed-1"].enumerated() {
            #expect(try Self.join(socket, try Self.token(idp, kid: kid))["type"] == "snapshot", "\(kid)")
            #expect(try Self.answer(socket, ["type": "action", "room": "counter", "name": "increment", "id": .int(index + 1)])["type"] == "ack")
        }
        // The server's own HS256 tokens work beside them.
        #expect(try Self.join(socket, try Self.hsToken(["--rooms", "counter"]))["type"] == "snapshot")
        // A token that may act over a WebSocket may act over HTTP.
        let base = "http://127.0.0.1:\(daemon.port)"
        for kid in ["rsa-1", "ec-1", "ed-1"] {
            let acted = try HTTPAPITests.curl(base, "POST", "/rooms/counter/actions/increment", token: try Self.token(idp, kid: kid))
            #expect(acted.status == 200, "\(kid): \(acted)")
        }
        let read = try HTTPAPITests.curl(base, "GET", "/rooms/counter", token: try Self.token(idp, kid: "ec-1"))
        #expect(read.json?["state"] == ["count": 6], "\(read)")
        let wrongAudience = try HTTPAPITests.curl(base, "GET", "/rooms/counter", token: try Self.token(idp, ["aud": "someone-else"]))
        #expect(wrongAudience.status == 401 && wrongAudience.headers.contains("www-authenticate: bearer"), "\(wrongAudience)")
        let metrics = try daemon.httpGET("/metrics").body
        #expect(metrics.contains("tether_jwks_keys 3") && metrics.contains(#"tether_jwks_fetches_total{result="ok"} 1"#), "\(metrics)")
    }

    @Test func aRotatedKeyIsFetchedOnceAndUnknownKidsAreRateLimited() throws {
        let idp = try IdentityProviderServer()
        defer { idp.stop() }
        let daemon = try Self.daemon(idp)
        defer { daemon.stop() }
        try Self.waitForKeys(idp)
        let socket = try Self.connect(daemon)
        let before = try idp.fetches()
        let kid = try #require(try idp.control("rotate")["kid"]?.stringValue)
        let first = try Self.join(socket, try Self.token(idp, kid: kid))
        #expect(first["code"] == "unavailable" && first["message"]?.stringValue?.contains("being refreshed") == true, "\(first)")
        #expect(try Self.joinEventually(socket, { try Self.token(idp, kid: kid) })["type"] == "snapshot")
        #expect(try idp.fetches() == before + 1, "one refresh for the new kid")
        // Tokens naming kids nobody published: refused, and no fetch each (one per 30 s at most).
        for attempt in 0..<20 {
            let answer = try Self.join(socket, try Self.token(idp, ["header_kid": .string("unknown-\(attempt)")]))
            #expect(answer["code"] == "unavailable")
        }
        Thread.sleep(forTimeInterval: 1)
        #expect(try idp.fetches() == before + 1, "rate-limited")
    }

    /// CVE-2026-49998's class: a second issuer publishing the first issuer's kids.
    @Test func aSecondIssuerCarryingTheFirstIssuersKidIsRefused() throws {
        let trusted = try IdentityProviderServer(issuer: "https://idp.test/realms/a")
        defer { trusted.stop() }
        let other = try IdentityProviderServer(issuer: "https://idp.test/realms/b")  // the same kids: rsa-1, ec-1, ed-1
        defer { other.stop() }
        let daemon = try Self.daemon(trusted)
        defer { daemon.stop() }
        try Self.waitForKeys(trusted)
        let socket = try Self.connect(daemon)
        let asItself = try Self.join(socket, try Self.token(other))
        #expect(asItself["code"] == "unauthorized" && asItself["message"]?.stringValue?.contains("not the identity provider this server trusts") == true,
                "\(asItself)")
        let posing = try Self.join(socket, try Self.token(other, ["iss": .string(trusted.issuer)]))
        #expect(posing["code"] == "unauthorized" && posing["message"]?.stringValue?.contains("signature does not match") == true, "\(posing)")
        #expect(try Self.join(socket, try Self.token(trusted))["type"] == "snapshot")
        #expect(try other.fetches() == 0, "the other issuer's keys are never fetched")
    }

    @Test func timesAndTheAudienceAreChecked() throws {
        let idp = try IdentityProviderServer()
        defer { idp.stop() }
        let daemon = try Self.daemon(idp)
        defer { daemon.stop() }
        try Self.waitForKeys(idp)
        let socket = try Self.connect(daemon)
        let early = try Self.join(socket, try Self.token(idp, ["nbf": 300]))
        #expect(early["code"] == "unauthorized" && early["message"]?.stringValue?.contains("not valid before") == true, "\(early)")
        #expect(try Self.join(socket, try Self.token(idp, ["nbf": 10]))["type"] == "snapshot", "within the 30 s leeway")
        let wrong = try Self.join(socket, try Self.token(idp, ["aud": "billing"]))
        #expect(wrong["code"] == "unauthorized" && wrong["message"]?.stringValue?.contains("audience") == true, "\(wrong)")
        let expired = try Self.join(socket, try Self.token(idp, ["ttl": -100]))
        #expect(expired["code"] == "unauthorized" && expired["message"]?.stringValue?.contains("expired") == true, "\(expired)")
        let future = try Self.join(socket, try Self.token(idp, ["iat": 300]))
        #expect(future["code"] == "unauthorized" && future["message"]?.stringValue?.contains("issued in the future") == true, "\(future)")
    }

    @Test func jwksDownAtStartThenUpAndDownAfterAGoodFetch() throws {
        let idp = try IdentityProviderServer(down: true)
        defer { idp.stop() }
        let daemon = try Self.daemon(idp, ["--jwks-refresh", "1", "--jwks-min-refresh", "1"])
        defer { daemon.stop() }
        try waitUntil("a failed fetch") { try idp.fetches() >= 1 }
        let socket = try Self.connect(daemon)
        let refused = try Self.join(socket, try Self.token(idp))
        #expect(refused["code"] == "unavailable" && refused["message"]?.stringValue?.contains("could not be fetched yet") == true, "\(refused)")
        #expect(try Self.join(socket, try Self.hsToken(["--rooms", "counter"]))["type"] == "snapshot", "HS256 tokens work meanwhile")
        _ = try idp.control("up")
        #expect(try Self.joinEventually(socket, { try Self.token(idp) })["type"] == "snapshot")
        // Down after a good fetch: refreshes fail, the keys fetched before keep working.
        _ = try idp.control("down")
        let downAt = try idp.fetches()
        try waitUntil("two failed refreshes") { try idp.fetches() >= downAt + 2 }
        #expect(try Self.join(socket, try Self.token(idp, kid: "ed-1"))["type"] == "snapshot")
    }

    @Test func tetherdTokenWritesNbfIssAudAndRead() throws {
        let token = try Self.hsToken(["--subject", "service:payments", "--rooms", "order:*", "--read", "dashboard:*", "--nbf", "120",
                                      "--iss", "https://tether.example.com", "--aud", "tether"])
        let now = Int(Date().timeIntervalSince1970)
        let claims = try TokenAuthority(secret: Array("s3cret".utf8)).verify(token, now: now + 121)
        #expect(claims.subject == "service:payments" && claims.rooms == ["order:*"] && claims.readRooms == ["dashboard:*"])
        #expect(claims.issuer == "https://tether.example.com" && claims.audience == ["tether"])
        #expect(abs((claims.notBefore ?? 0) - (now + 120)) <= 2 && abs((claims.issuedAt ?? 0) - now) <= 2)
        let daemon = try Daemon(arguments: ["--auth-secret", "s3cret"])
        defer { daemon.stop() }
        let socket = try Self.connect(daemon)
        let early = try Self.join(socket, try Self.hsToken(["--rooms", "counter", "--nbf", "120"]))
        #expect(early["code"] == "unauthorized" && early["message"]?.stringValue?.contains("not valid before") == true, "\(early)")
        #expect(try Self.join(socket, try Self.hsToken(["--rooms", "counter", "--nbf", "-5"]))["type"] == "snapshot")
        let none = try Daemon.runToExit(["token", "--secret", "s3cret"])
        #expect(none.status != 0 && none.stderr.contains("give --rooms or --read"), "\(none)")
    }

    @Test func checkFetchesTheKeySetAndNamesWhatIsMissing() throws {
        let idp = try IdentityProviderServer()
        defer { idp.stop() }
        let settings = ["check", "--auth-secret", "s3cret", "--jwks-url", idp.jwksURL, "--token-issuer", idp.issuer]
        let good = try Daemon.runToExit(settings)
        #expect(good.status == 0 && good.stdout.contains("3 keys for \(idp.issuer) (ec-1, ed-1, rsa-1)"), "\(good)")
        _ = try idp.control("down")
        let down = try Daemon.runToExit(settings)
        #expect(down.status == 0 && down.stderr.contains("warning: jwks-url \(idp.jwksURL): fetch answered HTTP 503"), "\(down)")
        let unbound = try Daemon.runToExit(["check", "--jwks-url", idp.jwksURL])
        #expect(unbound.status == 78 && unbound.stderr.contains("jwks-url needs token-issuer"), "\(unbound)")
        let plain = try Daemon.runToExit(["check", "--jwks-url", "http://idp.example.com/jwks", "--token-issuer", "x"])
        #expect(plain.status == 78 && plain.stderr.contains("http:// only on loopback"), "\(plain)")
    }

    @Test func aReadClaimJoinsButDoesNotAct() throws {
        let idp = try IdentityProviderServer()
        defer { idp.stop() }
        let daemon = try Self.daemon(idp)
        defer { daemon.stop() }
        try Self.waitForKeys(idp)
        let socket = try Self.connect(daemon)
        let provider = try Self.token(idp, ["sub": "service:reports", "rooms": [], "read": ["counter"]])
        let own = try Self.hsToken(["--subject", "service:reports", "--read", "counter"])
        for token in [provider, own] {
            #expect(try Self.join(socket, token)["type"] == "snapshot")
            let act = try Self.answer(socket, ["type": "action", "room": "counter", "name": "increment", "id": 7])
            #expect(act["code"] == "unauthorized"
                    && act["message"] == "the token of \"service:reports\" may read room counter but not act on it", "\(act)")
        }
        // Over HTTP: it reads and follows the room, and may not act (403).
        let base = "http://127.0.0.1:\(daemon.port)"
        for token in [provider, own] {
            #expect(try HTTPAPITests.curl(base, "GET", "/rooms/counter", token: token).status == 200)
            let act = try HTTPAPITests.curl(base, "POST", "/rooms/counter/actions/increment", token: token)
            #expect(act.status == 403 && act.json?["message"] == "the token of \"service:reports\" may read room counter but not act on it", "\(act)")
        }
        // A token that may act joins the same room and acts.
        #expect(try Self.join(socket, try Self.token(idp))["type"] == "snapshot")
        #expect(try Self.answer(socket, ["type": "action", "room": "counter", "name": "increment", "id": 8])["type"] == "ack")
    }
}
