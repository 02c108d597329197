import Foundation
import Testing
import TetherServer
import TetherTestSupport

/// `URLSessionOutboundHTTP` (JWKS fetches, webhook deliveries) against a real HTTP server
/// (Tests/HTTP/jwks_server.py's fixtures): what comes back, and what goes wrong, as documented.
@Suite("Outbound HTTP: redirects, deadlines, size bound, refusals")
struct OutboundHTTPTests {
    @Test func aRedirectIsAnsweredAsItIsNotFollowed() async throws {
        let server = try IdentityProviderServer()
        defer { server.stop() }
        let http = URLSessionOutboundHTTP()
        let response = try await http.send(OutboundRequest(url: URL(string: "http://127.0.0.1:\(server.port)/fixture/redirect")!))
        #expect(response.status == 302 && response.headers["location"] == "/fixture/ok")
        let ok = try await http.send(OutboundRequest(url: URL(string: "http://127.0.0.1:\(server.port)/fixture/ok")!))
        #expect(ok.status == 200 && ok.body == Array(#""ok""#.utf8))
    }

    @Test func aServerThatNeverAnswersTimesOutWithinTheDeadline() async throws {
        let server = try IdentityProviderServer()
        defer { server.stop() }
        let http = URLSessionOutboundHTTP()
        let started = ContinuousClock.now
        await #expect(throws: OutboundError.timedOut) {
            try await http.send(OutboundRequest(url: URL(string: "http://127.0.0.1:\(server.port)/fixture/hang")!, timeout: .seconds(1)))
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(8), "well before the server would answer: \(elapsed)")
    }

    @Test func aBodyOverTheBoundIsRefused() async throws {
        let server = try IdentityProviderServer()
        defer { server.stop() }
        let http = URLSessionOutboundHTTP(maxResponseBytes: 1_000)
        let url = { (bytes: Int) in URL(string: "http://127.0.0.1:\(server.port)/fixture/big?bytes=\(bytes)")! }
        do throws(OutboundError) {
            let response = try await http.send(OutboundRequest(url: url(100_000)))
            Issue.record("expected responseTooLarge, got HTTP \(response.status) with \(response.body.count) bytes")
        } catch {
            #expect(error == .responseTooLarge(limit: 1_000))
        }
        #expect(try await http.send(OutboundRequest(url: url(1_000))).body.count == 1_000, "exactly the bound is accepted")
    }

    @Test func aRefusedConnectionIsUnreachable() async throws {
        // A port that was free a moment ago: bound, then closed, so nothing listens.
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        close(probe)
        let http = URLSessionOutboundHTTP()
        let error = await #expect(throws: OutboundError.self) {
            try await http.send(OutboundRequest(url: URL(string: "http://127.0.0.1:\(port)/")!, timeout: .seconds(5)))
        }
        guard case .unreachable? = error else { Issue.record("expected unreachable, got \(String(describing: error))"); return }
    }
}
