import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// The HTTP API against a real tetherd, through `curl`: who may call what, idempotency across a
/// `kill -9`, an event stream resumed where it left, the rate limit, and a cluster.
@Suite("End to end: the HTTP API", .serialized, .timeLimit(.minutes(3)))
struct HTTPAPITests {
    static let secret = "http-api-secret"

    struct Answer {
        var status: Int
        var headers: String
        var body: String
        var json: JSON? { try? JSON(parsing: body) }
    }

    /// One request with curl: status, headers and body.
    static func curl(_ base: String, _ method: String, _ path: String, token: String? = nil, body: String? = nil,
                     headers: [String] = [], maxTime: Int = 15) throws -> Answer {
        var arguments = ["-s", "-D", "/dev/stderr", "-X", method, "--max-time", "\(maxTime)", base + path]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        if let body { arguments += ["--data-binary", body] }
        for header in headers { arguments += ["-H", header] }
        if method == "GET" { arguments.removeSubrange(3...4) }
        let result = try runProgram(URL(fileURLWithPath: "/usr/bin/curl"), arguments, timeout: .seconds(maxTime + 5))
        let headers = result.stderr.replacingOccurrences(of: "\r", with: "")
        let status = headers.split(separator: "\n").first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        return Answer(status: status, headers: headers.lowercased(), body: result.stdout)
    }

    static func token(_ subject: String, rooms: String) throws -> String {
        let result = try Daemon.runToExit(["token", "--secret", secret, "--subject", subject, "--rooms", rooms, "--ttl", "600"])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aTokenDecidesWhoMayActAndRead() throws {
        let daemon = try Daemon(arguments: ["--auth-secret", Self.secret, "--memory-only"])
        defer { _ = daemon.stop() }
        let base = "http://127.0.0.1:\(daemon.port)"
        let billing = try Self.token("service:billing", rooms: "counter"), voting = try Self.token("service:votes", rooms: "vote:*")

        let none = try Self.curl(base, "POST", "/rooms/counter/actions/increment")
        #expect(none.status == 401 && none.headers.contains("www-authenticate: bearer"), "\(none)")
        #expect(none.json?["code"] == "unauthorized" && none.json?["applied"] == false)
        #expect(try Self.curl(base, "POST", "/rooms/counter/actions/increment", token: "not.a.token").status == 401)
        let other = try Self.curl(base, "POST", "/rooms/counter/actions/increment", token: voting)
        #expect(other.status == 403 && other.json?["code"] == "unauthorized", "\(other)")

        let acted = try Self.curl(base, "POST", "/rooms/counter/actions/increment", token: billing, body: #"{"by": 3}"#)
        #expect(acted.status == 200 && acted.json == ["room": "counter", "action": "increment", "version": 1], "\(acted)")
        let read = try Self.curl(base, "GET", "/rooms/counter", token: billing)
        #expect(read.status == 200 && read.json?["state"] == ["count": 3] && read.json?["version"] == 1, "\(read)")
        #expect(try Self.curl(base, "GET", "/rooms/counter", token: voting).status == 403)
        // The ViewModel saw the token's subject vote, and a read shows that viewer's own values.
        _ = try Self.curl(base, "POST", "/rooms/vote:lunch/actions/vote", token: voting, body: #"{"option": "pizza"}"#)
        let vote = try Self.curl(base, "GET", "/rooms/vote:lunch", token: voting)
        #expect(vote.json?["state"]?["mine"] == "pizza" && vote.headers.contains("vary: authorization"), "\(vote)")
        let bystander = try Self.curl(base, "GET", "/rooms/vote:lunch", token: try Self.token("someone", rooms: "vote:*"))
        #expect(bystander.json?["state"]?["mine"] == nil && bystander.status == 200 && bystander.json?["state"]?["totals"]?["pizza"] == 1, "\(bystander)")

        // A read never makes a room; a per-connection kind has no room over HTTP.
        let missing = try Self.curl(base, "GET", "/rooms/vote:nobody", token: voting)
        #expect(missing.status == 404 && missing.json?["code"] == "unknown_room", "\(missing)")
        let login = try Self.curl(base, "POST", "/rooms/login/actions/logIn", token: try Self.token("a", rooms: "*"))
        #expect(login.status == 404, "\(login)")
    }

    @Test func aNumberedActionRunsOnceAcrossAKill9() throws {
        let data = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        var daemon = try Daemon(dataDirectory: data)
        defer { _ = daemon.stop() }
        func increment(_ key: Int) throws -> Answer {
            try Self.curl("http://127.0.0.1:\(daemon.port)", "POST", "/rooms/counter/actions/increment",
                          headers: ["Tether-Client: payments-7", "Idempotency-Key: \(key)"])
        }
        #expect(try increment(1).json?["version"] == 1)
        daemon.kill9()
        daemon = try Daemon(dataDirectory: data)
        let again = try increment(1)
        #expect(again.status == 200 && again.json?["version"] == 1, "the first outcome, not a second run: \(again)")
        #expect(try Self.curl("http://127.0.0.1:\(daemon.port)", "GET", "/rooms/counter").json?["state"] == ["count": 1])
        for key in 2...70 { #expect(try increment(key).status == 200) }
        let stale = try increment(3)
        #expect(stale.status == 409 && stale.json?["code"] == "stale_action" && stale.json?["applied"] == "unknown", "\(stale)")
        #expect(try Self.curl("http://127.0.0.1:\(daemon.port)", "GET", "/rooms/counter").json?["state"] == ["count": 70])
    }

    @Test func anEventStreamResumesAfterItsLastEventID() throws {
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { _ = daemon.stop() }
        let base = "http://127.0.0.1:\(daemon.port)"
        for _ in 1...3 { _ = try Self.curl(base, "POST", "/rooms/counter/actions/increment") }
        let epoch = try #require(try Self.curl(base, "GET", "/rooms/counter").json?["epoch"]?.stringValue)

        // The whole stream: a snapshot at 3.
        let whole = try Self.curl(base, "GET", "/rooms/counter/events", maxTime: 1)
        #expect(whole.headers.contains("content-type: text/event-stream"), "\(whole.headers)")
        #expect(whole.body.contains("event: snapshot\nid: \(epoch).3\ndata: {\"type\":\"snapshot\""), "\(whole.body)")
        // After version 1: what changed since, as one (merged) patch from 1 to 3, no snapshot.
        let resumed = try Self.curl(base, "GET", "/rooms/counter/events", headers: ["Last-Event-ID: \(epoch).1"], maxTime: 1)
        let ids = resumed.body.split(separator: "\n").filter { $0.hasPrefix("id: ") }
        #expect(ids == ["id: \(epoch).3"], "\(resumed.body)")
        #expect(resumed.body.contains(#""from":1,"version":3"#) && !resumed.body.contains("event: snapshot"), "\(resumed.body)")
        let bad = try Self.curl(base, "GET", "/rooms/counter/events", headers: ["Last-Event-ID: nonsense"])
        #expect(bad.status == 400 && bad.json?["code"] == "bad_message")
    }

    @Test func aCallerOverItsRateIsRefusedWithRetryAfter() throws {
        let daemon = try Daemon(arguments: ["--memory-only", "--max-actions-per-second", "0.5", "--action-burst", "2"])
        defer { _ = daemon.stop() }
        let base = "http://127.0.0.1:\(daemon.port)"
        // Each request lands on one of the socket threads; each counts the caller on its own.
        var statuses: [Int] = []
        for _ in 0..<8 { statuses.append(try Self.curl(base, "POST", "/rooms/counter/actions/increment").status) }
        #expect(statuses.filter { $0 == 200 }.count <= 4 && statuses.contains(429), "\(statuses)")
        let refused = try Self.curl(base, "POST", "/rooms/counter/actions/increment")
        #expect(refused.status == 429 && refused.headers.contains("retry-after:") && refused.json?["code"] == "rate_limited", "\(refused)")
    }

    @Test @MainActor func anyClusterNodeTakesActionsAndReadsTheRoom() async throws {
        let cluster = try ClusterFixture(nodes: ["n1", "n2"])
        defer { cluster.stop() }
        let bases = ["n1", "n2"].map { "http://127.0.0.1:\(cluster.node($0).port)" }
        for index in 0..<10 {
            let answer = try Self.curl(bases[index % 2], "POST", "/rooms/counter:http/actions/increment", headers: ["Idempotency-Key: c-\(index)"])
            #expect(answer.status == 200, "\(answer) \(cluster.logs)")
        }
        // A repeat on the other node: the first outcome, not an eleventh increment.
        #expect(try Self.curl(bases[1], "POST", "/rooms/counter:http/actions/increment", headers: ["Idempotency-Key: c-0"]).status == 200)
        for base in bases {
            try await eventually("\(base) reads 10", timeout: .seconds(10)) {
                try Self.curl(base, "GET", "/rooms/counter:http").json?["state"] == ["count": 10]
            }
        }
    }
}

/// A Server-Sent Events reader that stops reading is a slow client like any other: its queue is
/// bounded, the room and other callers go on, and it is closed once its queue makes no progress.
@Suite("End to end: a stalled event-stream reader", .timeLimit(.minutes(2)))
struct StalledEventStreamTests {
    @Test @MainActor func aReaderThatStopsIsClosedAndCostsOthersNothing() async throws {
        let daemon = try Daemon(arguments: ["--memory-only", "--send-queue-bytes", "65536", "--stuck-client-seconds", "2"])
        defer { _ = daemon.stop() }
        let base = "http://127.0.0.1:\(daemon.port)"
        _ = try HTTPAPITests.curl(base, "POST", "/rooms/bench:slow/actions/set", body: #"{"key": "a", "value": 0}"#)
        let reader = try RawSocket(port: daemon.port, receiveBufferBytes: 4096)
        try reader.write("GET /rooms/bench:slow/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(try reader.readHTTPHeaders().lowercased().contains("content-type: text/event-stream"))
        // It stops reading; 16 MB of patches follow (beyond what the kernel's buffers hold), and
        // every action is answered at once.
        let payload = String(repeating: "x", count: 64_000)
        let start = ContinuousClock.now
        for index in 0..<250 {
            let body = #"{"key": "a", "value": "\#(index)\#(payload)"}"#
            let answer = try RawSocket(port: daemon.port).http("POST /rooms/bench:slow/actions/set HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(answer.status == 200)
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(60), "250 actions took \(elapsed)")
        // Closed as a stuck client (the metric), then what it can still read ends.
        try await eventually("the reader is closed as stuck", timeout: .seconds(20)) {
            let metrics = (try? daemon.httpGET("/metrics").body) ?? ""
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("tether_stuck_clients_closed_total ") }
            return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { $0 >= 1 } == true
        }
        let rest = try reader.readAll(timeout: .seconds(30))
        #expect(rest.count < 8_000_000, "bounded: \(rest.count) of 16 MB reached it")
        #expect(try HTTPAPITests.curl(base, "GET", "/rooms/bench:slow").status == 200)
    }
}
