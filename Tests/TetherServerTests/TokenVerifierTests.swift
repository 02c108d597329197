import Crypto
import CryptoExtras
import Foundation
import JWTKit
import Testing
import TetherDemos
import TetherJSON
import TetherProtocol
@testable import TetherServer
import TetherTesting

/// The token matrix: an identity provider made in process (jwt-kit keys, its JWKS document as
/// tetherd loads it) and this server's HS256 secret; every refusal has its own error. Times are
/// the server's clock (`now`), never the system's.
@Suite("Token verifier: algorithms, keys by issuer and kid, claims with leeway")
struct TokenVerifierTests {
    static let issuer = "https://idp.example.com/realms/app"
    static let now = 1_900_000_000
    static let secret = TokenAuthority(secret: Array("hs-secret".utf8))

    /// An identity provider: keys to sign with (kids rsa-1, ec-1, ed-1) and its public JWKS.
    struct Provider {
        let signer: JWTKeyCollection
        let rsaPublicPEM: String
        let jwks: JSON

        static func make(kidPrefix: String = "") async throws -> Provider {
            let rsa = try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
            let ec = ES256PrivateKey()
            let ed = Curve25519.Signing.PrivateKey()
            let signer = JWTKeyCollection()
            await signer.add(rsa: rsa, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kidPrefix + "rsa-1"))
            await signer.add(ecdsa: ec, kid: JWKIdentifier(string: kidPrefix + "ec-1"))
            await signer.add(eddsa: EdDSA.PrivateKey(backing: ed), kid: JWKIdentifier(string: kidPrefix + "ed-1"))
            let (n, e) = try rsa.publicKey.getKeyPrimitives()
            let point = try #require(ec.parameters)
            let keys: [JSON] = [
                ["kty": "RSA", "kid": .string(kidPrefix + "rsa-1"), "use": "sig", "n": .string(b64url(n)), "e": .string(b64url(e))],
                ["kty": "EC", "kid": .string(kidPrefix + "ec-1"), "crv": "P-256", "x": .string(point.x), "y": .string(point.y)],
                ["kty": "OKP", "kid": .string(kidPrefix + "ed-1"), "crv": "Ed25519", "alg": "EdDSA", "x": .string(b64url(ed.publicKey.rawRepresentation))],
            ]
            return Provider(signer: signer, rsaPublicPEM: rsa.publicKey.pemRepresentation, jwks: ["keys": .array(keys)])
        }

        func token(kid: String, _ claims: [String: JSON]) async throws -> String {
            try await signer.sign(TokenPayload(.object(claims)), kid: JWKIdentifier(string: kid))
        }
    }

    static func claims(iss: String = issuer, aud: JSON? = "tether", exp: Int = now + 600, extra: [String: JSON] = [:]) -> [String: JSON] {
        var claims: [String: JSON] = ["sub": "ana", "iss": .string(iss), "exp": .int(exp), "rooms": ["counter"]]
        if let aud { claims["aud"] = aud }
        return claims.merging(extra) { _, new in new }
    }

    /// A verifier holding `provider`'s keys as a fetch would leave them.
    static func verifier(_ provider: Provider, audience: String? = "tether") async throws -> TokenVerifier {
        let keys = IdentityKeys(minRefreshInterval: .seconds(30))
        let loaded = try await JWKSDocument.load(Array(provider.jwks.encoded()))
        #expect(loaded.skipped.isEmpty, "\(loaded.skipped)")
        keys.replace(issuer: issuer, with: loaded.keys)
        let idp = IdentityProvider(jwksURL: URL(string: "https://idp.example.com/jwks")!, issuer: issuer, audience: audience)
        return TokenVerifier(secrets: secret, provider: idp, providerKeys: keys, leeway: 30)
    }

    static func b64url(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A token put together by hand, as an attacker would: any header, any signature.
    static func forged(header: JSON, payload: [String: JSON], signature: (String) -> [UInt8] = { _ in [] }) -> String {
        let input = b64url(header.encoded()) + "." + b64url(JSON.object(payload).encoded())
        return input + "." + b64url(signature(input))
    }

    static func refusal(_ result: Result<AccessClaims, TokenError>) -> TokenError? {
        if case .failure(let error) = result { return error } else { return nil }
    }

    @Test func rs256ES256EdDSAAndHS256AreAccepted() async throws {
        let idp = try await Provider.make()
        let verifier = try await Self.verifier(idp)
        for kid in ["rsa-1", "ec-1", "ed-1"] {
            let token = try await idp.token(kid: kid, Self.claims())
            #expect(try verifier.verify(token, now: Self.now).get().subject == "ana", "\(kid)")
        }
        let hs = await Self.secret.mint(AccessClaims(subject: "bo", expires: Self.now + 60, rooms: ["*"]))
        #expect(try verifier.verify(hs, now: Self.now).get().subject == "bo")
    }

    @Test func algNoneAndAlgorithmConfusionAreRefused() async throws {
        let idp = try await Provider.make()
        let verifier = try await Self.verifier(idp)
        let none = Self.forged(header: ["alg": "none", "typ": "JWT"], payload: Self.claims())
        #expect(Self.refusal(verifier.verify(none, now: Self.now)) == .unsupportedAlgorithm("none"))
        // The classic confusion: HS256 "signed" with the provider's public key as the HMAC secret.
        let publicKey = Array(idp.rsaPublicPEM.utf8)
        let sign = { (input: String) in Array(HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: publicKey))) }
        let confusedWithKid = Self.forged(header: ["alg": "HS256", "kid": "rsa-1"], payload: Self.claims(), signature: sign)
        #expect(Self.refusal(verifier.verify(confusedWithKid, now: Self.now)) == .unknownKey("rsa-1"), "public keys are never HMAC secrets")
        let confused = Self.forged(header: ["alg": "HS256"], payload: Self.claims(), signature: sign)
        #expect(Self.refusal(verifier.verify(confused, now: Self.now)) == .badSignature)
        // And no HS256 at all on a server without secrets.
        var withoutSecrets = verifier
        withoutSecrets.secrets = nil
        #expect(Self.refusal(withoutSecrets.verify(confused, now: Self.now))?.description.hasPrefix("token algorithm HS256") == true)
    }

    @Test func anOctKeyInTheJWKSIsNeverTaken() async throws {
        let oct: JSON = ["keys": [["kty": "oct", "kid": "shared", "k": .string(Self.b64url(Array("hs-secret".utf8)))]]]
        let loaded = try await JWKSDocument.load(Array(oct.encoded()))
        #expect(loaded.keys.isEmpty && loaded.skipped == ["shared: an oct (shared secret) key; only public keys are taken"])
    }

    @Test func anUnknownKidIsRefusedAndAsksForARateLimitedRefresh() async throws {
        let idp = try await Provider.make()
        let verifier = try await Self.verifier(idp)
        let other = try await Provider.make(kidPrefix: "new-")
        let token = try await other.token(kid: "new-rsa-1", Self.claims())
        #expect(Self.refusal(verifier.verify(token, now: Self.now)) == .unknownProviderKey(issuer: Self.issuer, kid: "new-rsa-1"))
        let keys = try #require(verifier.providerKeys)
        #expect(keys.takeRefreshRequest(), "the first unknown kid asks for a refresh")
        _ = verifier.verify(token, now: Self.now + 10)
        #expect(!keys.takeRefreshRequest(), "a second one within 30 s does not")
        _ = verifier.verify(token, now: Self.now + 31)
        #expect(keys.takeRefreshRequest())
    }

    /// CVE-2026-49998's class: keys of two issuers that share a kid never check each other's tokens.
    @Test func anotherIssuersTokenNeverReachesTheseKeys() async throws {
        let idp = try await Provider.make()
        let verifier = try await Self.verifier(idp)
        let attacker = try await Provider.make()  // same kids: rsa-1, ec-1, ed-1
        let asItself = try await attacker.token(kid: "rsa-1", Self.claims(iss: "https://evil.example.com"))
        #expect(Self.refusal(verifier.verify(asItself, now: Self.now)) == .unknownIssuer("https://evil.example.com"))
        let posing = try await attacker.token(kid: "rsa-1", Self.claims())
        #expect(Self.refusal(verifier.verify(posing, now: Self.now)) == .badSignature)
        let noIssuer = try await idp.token(kid: "rsa-1", Self.claims().filter { $0.key != "iss" })
        #expect(Self.refusal(verifier.verify(noIssuer, now: Self.now)) == .unknownIssuer(nil))
    }

    @Test func theAlgorithmIsTheKeysNotTheTokens() async throws {
        let idp = try await Provider.make()
        let verifier = try await Self.verifier(idp)
        let ec = JWTKeyCollection()
        await ec.add(ecdsa: ES256PrivateKey(), kid: "rsa-1")
        let token = try await ec.sign(TokenPayload(.object(Self.claims())), kid: "rsa-1")
        #expect(Self.refusal(verifier.verify(token, now: Self.now)) == .algorithmMismatch(kid: "rsa-1", key: "RS256", token: "ES256"))
    }

    @Test func timesAreCheckedWithTheLeeway() async throws {
        let idp = try await Provider.make()
        let verifier = try await Self.verifier(idp)
        let now = Self.now
        func check(_ extra: [String: JSON], exp: Int = now + 600) async throws -> TokenError? {
            Self.refusal(verifier.verify(try await idp.token(kid: "ec-1", Self.claims(exp: exp, extra: extra)), now: now))
        }
        #expect(try await check(["nbf": .int(now + 31)]) == .notYetValid(at: now + 31, now: now))
        #expect(try await check(["nbf": .int(now + 29)]) == nil, "within the leeway")
        #expect(try await check([:], exp: now - 31) == .expired(at: now - 31, now: now))
        #expect(try await check([:], exp: now - 29) == nil, "within the leeway")
        #expect(try await check(["iat": .int(now + 120)]) == .issuedInFuture(at: now + 120, now: now))
        #expect(try await check(["iat": .int(now - 120)]) == nil)
        let noExpiry = try await idp.token(kid: "ec-1", Self.claims().filter { $0.key != "exp" })
        #expect(Self.refusal(verifier.verify(noExpiry, now: now)) == .malformed("no numeric \"exp\" claim (expiry)"))
        #expect(try await check(["nbf": .int(now + 31)])?.description.contains("nbf") == true)
    }

    @Test func theAudienceMustNameThisServer() async throws {
        let idp = try await Provider.make()
        let verifier = try await Self.verifier(idp)
        let wrong = try await idp.token(kid: "ed-1", Self.claims(aud: "billing"))
        #expect(Self.refusal(verifier.verify(wrong, now: Self.now)) == .wrongAudience(expected: "tether", found: ["billing"]))
        let missing = try await idp.token(kid: "ed-1", Self.claims(aud: nil))
        #expect(Self.refusal(verifier.verify(missing, now: Self.now)) == .wrongAudience(expected: "tether", found: nil))
        let several = try await idp.token(kid: "ed-1", Self.claims(aud: ["billing", "tether"]))
        #expect(Self.refusal(verifier.verify(several, now: Self.now)) == nil)
        let anyAudience = try await Self.verifier(idp, audience: nil)
        #expect(Self.refusal(anyAudience.verify(wrong, now: Self.now)) == nil, "checked only when configured")
    }

    @Test func beforeTheFirstFetchProviderTokensWaitAndHS256Works() async throws {
        let idp = try await Provider.make()
        var verifier = try await Self.verifier(idp)
        verifier.providerKeys = IdentityKeys()
        let token = try await idp.token(kid: "rsa-1", Self.claims())
        #expect(Self.refusal(verifier.verify(token, now: Self.now)) == .keysUnavailable(issuer: Self.issuer, why: "first fetch pending"))
        let hs = await Self.secret.mint(AccessClaims(subject: "bo", expires: Self.now + 60, rooms: ["*"]))
        #expect(Self.refusal(verifier.verify(hs, now: Self.now)) == nil)
    }

    /// Through the hub: a provider's token is checked on the server's clock (`ServerClock`; here
    /// `TestServer`'s virtual one), its expiry with the leeway, at the join and for each action.
    @Test func providerTokensExpireOnTheServersVirtualClock() async throws {
        let idp = try await Provider.make()
        let keys = IdentityKeys()
        keys.replace(issuer: Self.issuer, with: try await JWKSDocument.load(Array(idp.jwks.encoded())).keys)
        var configuration = TestServer.defaultConfiguration
        configuration.jwksURL = "https://idp.example.com/jwks"
        configuration.tokenIssuer = Self.issuer
        configuration.identityKeys = keys
        let server = TestServer(configuration: configuration, kinds: Demos.kinds)
        let start = server.clock.secondsSince1970
        let token = try await idp.token(kid: "ed-1", Self.claims(aud: nil, exp: start + 60))
        let client = server.connect()
        _ = client.receiveAll()
        client.send(.join(room: "counter", id: 1, token: token))
        client.send(.action(room: "counter", name: "increment", id: 2))
        #expect(client.receiveAll().last == .ack(id: 2, room: "counter", version: 1))
        server.advance(by: .seconds(80))  // past exp, within the leeway
        client.send(.action(room: "counter", name: "increment", id: 3))
        #expect(client.receiveAll().last == .ack(id: 3, room: "counter", version: 2))
        server.advance(by: .seconds(11))  // past exp + 30 s
        client.send(.action(room: "counter", name: "increment", id: 4))
        #expect(client.receiveAll().compactMap(\.error).last?.message.contains("expired") == true)
        client.send(.join(room: "counter", id: 5, token: token))
        let refused = client.receiveAll().compactMap(\.error).last
        #expect(refused?.code == .unauthorized && refused?.message.hasPrefix("token expired at") == true, "\(String(describing: refused))")
    }

    @Test func readClaimsOpenRoomsForReadingOnly() async throws {
        let idp = try await Provider.make()
        let verifier = try await Self.verifier(idp)
        let token = try await idp.token(kid: "rsa-1", Self.claims(extra: ["rooms": "todo:* counter", "read": ["dashboard:*"], "sub": "service:reports"]))
        let claims = try verifier.verify(token, now: Self.now).get()
        #expect(claims.allows(.act, room: "todo:a") && claims.allows(.read, room: "counter"), "a space-separated text, as IdP mappers emit")
        #expect(claims.allows(.read, room: "dashboard:main") && !claims.allows(.act, room: "dashboard:main"))
        #expect(!claims.allows(.read, room: "other"))
    }
}
