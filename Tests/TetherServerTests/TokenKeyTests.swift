import Foundation
import Testing
import TetherServer

/// Named token secrets (kid) for rotation without refusing anyone.
@Suite("Token secrets by kid")
struct TokenKeyTests {
    let claims = AccessClaims(subject: "alice", expires: 2_000_000_000, rooms: ["counter"])
    let now = 1_900_000_000

    @Test func aTokenIsCheckedWithTheSecretItsKidNames() async throws {
        let keys = TokenAuthority(secret: nil, named: ["old": Array("old-secret".utf8), "new": Array("new-secret".utf8)])
        let byOld = try #require(await keys.mint(claims, kid: "old"))
        let byNew = try #require(await keys.mint(claims, kid: "new"))
        #expect(try keys.verify(byOld, now: now) == claims)
        #expect(try keys.verify(byNew, now: now) == claims)
        // After the rotation only the new secret remains.
        let rotated = TokenAuthority(secret: nil, named: ["new": Array("new-secret".utf8)])
        #expect(throws: TokenError.unknownKey("old")) { try rotated.verify(byOld, now: now) }
        #expect(try rotated.verify(byNew, now: now) == claims)
    }

    @Test func aKidCannotBorrowAnotherSecret() async throws {
        let forged = try #require(await TokenAuthority(secret: nil, named: ["new": Array("attacker".utf8)]).mint(claims, kid: "new"))
        let server = TokenAuthority(secret: nil, named: ["new": Array("new-secret".utf8)])
        #expect(throws: TokenError.badSignature) { try server.verify(forged, now: now) }
    }

    @Test func unnamedAndNamedSecretsLiveSideBySide() async throws {
        let unnamed = TokenAuthority(secret: Array("single".utf8))
        let plain = await unnamed.mint(claims)
        let both = unnamed.adding(TokenAuthority(secret: nil, named: ["k1": Array("named".utf8)]))
        #expect(try both.verify(plain, now: now) == claims, "tokens without kid keep working while named secrets are added")
        #expect(try both.verify(try #require(await both.mint(claims, kid: "k1")), now: now) == claims)
        let namedOnly = TokenAuthority(secret: nil, named: ["k1": Array("named".utf8)])
        #expect(throws: TokenError.unknownKey(nil)) { try namedOnly.verify(plain, now: now) }
        #expect(await namedOnly.mint(claims, kid: "missing") == nil)
        #expect(await both.namingUnnamedSecret("k2").mint(claims, kid: "k2") != nil)
    }

    @Test func theSecretsFileIsReadAndItsMistakesNamed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = directory.appendingPathComponent("good.yaml").path
        try "2026-01: \"first secret\"\n2026-04: 'second: secret'\n".write(toFile: good, atomically: true, encoding: .utf8)
        #expect(try TokenSecretsFile.read(good) == ["2026-01": Array("first secret".utf8), "2026-04": Array("second: secret".utf8)])

        let number = directory.appendingPathComponent("number.yaml").path
        try "k: 12345\n".write(toFile: number, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.badFile(number, "k: the secret must be text (quote it)")) { try TokenSecretsFile.read(number) }
        let empty = directory.appendingPathComponent("empty.yaml").path
        try "\n".write(toFile: empty, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.badFile(empty, "expected kid: secret lines (a YAML mapping), found none")) { try TokenSecretsFile.read(empty) }
        #expect(throws: ConfigurationError.unreadable("auth-secrets-file", directory.path + "/missing")) { try TokenSecretsFile.read(directory.path + "/missing") }

        // Through the loader: both kinds of secret at once.
        let loaded = try ConfigurationLoader().load(arguments: ["--auth-secret", "single", "--auth-secrets-file", good], environment: [:])
        let auth = try #require(loaded.configuration.auth)
        #expect(auth.hasUnnamedSecret && auth.keyNames == ["2026-01", "2026-04"])
        #expect(loaded.configuration.authSecretsFile == good)
    }

    /// An expiry reads as a UTC time and how long ago, not seconds since 1970.
    @Test func anExpiredTokenSaysWhenInUTCAndHowLongAgo() async throws {
        let keys = TokenAuthority(secret: Array("s".utf8))
        let token = await keys.mint(claims)
        let error = #expect(throws: TokenError.self) { try keys.verify(token, now: 2_000_000_000 + 180) }
        #expect(error?.description == "token expired at 2033-05-18T03:33:20Z (3 min ago)")
    }
}
