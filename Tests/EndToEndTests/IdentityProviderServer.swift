import Foundation
import TetherJSON
import TetherTestSupport

/// `Tests/HTTP/jwks_server.py` as a process: an identity provider with real keys (PyJWT), its
/// JWKS, tokens minted on request, and switches (rotate, down, up). Stopped by `stop()` or when
/// released.
final class IdentityProviderServer: @unchecked Sendable {
    static let script = Repository.root.appendingPathComponent("Tests/HTTP/jwks_server.py")

    let process: Process
    let port: Int
    let issuer: String
    var jwksURL: String { "http://127.0.0.1:\(port)/.well-known/jwks.json" }

    init(issuer: String = "https://idp.test/realms/a", down: Bool = false) throws {
        self.issuer = issuer
        (process, self.port) = try PythonCounterpart.start(Self.script, ["--issuer", issuer] + (down ? ["--down"] : []), needs: "PyJWT")
    }

    /// POSTs `body` to `path` and returns the JSON answer.
    @discardableResult
    func post(_ path: String, _ body: JSON) throws -> JSON {
        let bytes = body.encoded()
        let socket = try RawSocket(port: port)
        let answer = try socket.http("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(bytes.count)\r\n\r\n"
                                     + String(decoding: bytes, as: UTF8.self))
        return try JSON(parsing: String(decoding: answer.body, as: UTF8.self))
    }

    /// A token signed with the key `kid` (rsa-1, ec-1, ed-1, or one made by `rotate`).
    func mint(_ request: [String: JSON]) throws -> String {
        let answer = try post("/mint", .object(request))
        guard let token = answer["token"]?.stringValue else { throw IdentityProviderError("mint: \(answer)") }
        return token
    }

    func control(_ op: String) throws -> JSON { try post("/control", ["op": .string(op)]) }

    /// How many times the JWKS was asked for.
    func fetches() throws -> Int { try control("count")["fetches"]?.intValue ?? -1 }

    /// SIGKILL: a process started by Foundation inherits the test runner's blocked SIGTERM.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}

struct IdentityProviderError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
