import Testing
@testable import TetherTransport

/// The rules a WebSocket upgrade passes before lws accepts it: the page's origin and the
/// offered subprotocols. (Tests/EndToEndTests/WebServingTests.swift sends the same over a socket.)
@Suite("Upgrade checks")
struct UpgradeCheckTests {
    @Test func byDefaultOnlyTheServersOwnOriginPasses() {
        let policy = OriginPolicy.ownOriginOnly
        #expect(policy.allows(origin: "http://127.0.0.1:8080", host: "127.0.0.1:8080"))
        #expect(policy.allows(origin: "http://localhost:8080", host: "localhost:8080"), "opened as localhost")
        #expect(!policy.allows(origin: "http://localhost:8080", host: "127.0.0.1:8080"), "a name is not its address")
        #expect(!policy.allows(origin: "http://127.0.0.1:9090", host: "127.0.0.1:8080"), "another port is another origin")
        #expect(!policy.allows(origin: "http://evil.example", host: "127.0.0.1:8080"))
        #expect(policy.allows(origin: "HTTP://LocalHost:8080", host: "localhost:8080"), "scheme and host ignore case")
        #expect(policy.allows(origin: "https://tether.example.com", host: "tether.example.com"), "default ports: behind a TLS proxy")
        #expect(policy.allows(origin: "http://tether.example.com:80", host: "tether.example.com"))
        #expect(!policy.allows(origin: "https://tether.example.com", host: "tether.example.com:8443"))
        #expect(policy.allows(origin: "http://[::1]:8080", host: "[::1]:8080"))
        #expect(!policy.allows(origin: "null", host: "127.0.0.1:8080"), "sandboxed and file pages send null")
        #expect(!policy.allows(origin: "file://", host: "127.0.0.1:8080"))
        #expect(!policy.allows(origin: "http://127.0.0.1:8080", host: nil))
        #expect(!policy.allows(origin: "http://127.0.0.1:8080@evil.example", host: "127.0.0.1:8080"))
    }

    @Test func requestsWithoutAnOriginAreNotFromBrowsersAndPass() {
        #expect(OriginPolicy.ownOriginOnly.allows(origin: nil, host: "127.0.0.1:8080"))
        #expect(OriginPolicy.ownOriginOnly.allows(origin: nil, host: nil))
    }

    @Test func listedOriginsPassToo() throws {
        let policy = try OriginPolicy(allowing: ["https://app.example.com", " http://localhost:3000/ "])
        #expect(policy.entries == ["http://localhost:3000", "https://app.example.com"])
        #expect(policy.allows(origin: "https://app.example.com", host: "127.0.0.1:8080"))
        #expect(policy.allows(origin: "https://app.example.com:443", host: "127.0.0.1:8080"))
        #expect(policy.allows(origin: "http://localhost:3000", host: "127.0.0.1:8080"))
        #expect(!policy.allows(origin: "http://app.example.com", host: "127.0.0.1:8080"), "the scheme counts for listed origins")
        #expect(!policy.allows(origin: "https://evil.example", host: "127.0.0.1:8080"))
        #expect(policy.allows(origin: "http://127.0.0.1:8080", host: "127.0.0.1:8080"), "the own origin stays allowed")
        let any = try OriginPolicy(allowing: ["*"])
        #expect(any.allows(origin: "https://anything.example", host: "127.0.0.1:8080") && any.allows(origin: "null", host: nil))
        #expect(try OriginPolicy(allowing: []) == .ownOriginOnly)
    }

    @Test func entriesThatAreNotOriginsAreRefused() {
        for entry in ["app.example.com", "https://app.example.com/path", "ftp://x.example", "https://", "https://x:99999", "null"] {
            #expect(throws: OriginPolicyError(entry: entry), "\(entry)") { try OriginPolicy(allowing: [entry]) }
        }
    }

    @Test func aClientThatOffersOnlyOtherSubprotocolsIsToldOurs() throws {
        let check = UpgradeCheck(subprotocol: "tether.v1", origins: .ownOriginOnly)
        #expect(check.refusal(origin: nil, host: "h", offeredSubprotocols: nil) == nil, "none offered")
        #expect(check.refusal(origin: nil, host: "h", offeredSubprotocols: "tether.v1") == nil)
        #expect(check.refusal(origin: nil, host: "h", offeredSubprotocols: "chat, tether.v1") == nil, "ours among others")
        let refused = try #require(check.refusal(origin: nil, host: "h", offeredSubprotocols: "chat,graphql-ws"))
        #expect(refused.status == 400)
        let text = String(decoding: refused.body, as: UTF8.self)
        #expect(text.contains("tether.v1") && text.contains("chat, graphql-ws"))
        let long = String(repeating: "x", count: 120) + ",tether.v1"
        #expect(check.refusal(origin: nil, host: "h", offeredSubprotocols: long)?.status == 400, "longer than lws can read")
    }

    @Test func aForeignOriginIsRefusedBeforeAnythingElse() throws {
        let check = UpgradeCheck(subprotocol: "tether.v1", origins: .ownOriginOnly)
        let refused = try #require(check.refusal(origin: "http://evil.example", host: "127.0.0.1:8080", offeredSubprotocols: "chat"))
        #expect(refused.status == 403)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("--allowed-origins"))
        #expect(refused.headers["X-Content-Type-Options"] == "nosniff")
    }
}
