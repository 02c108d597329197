import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TetherJSON
import TetherTestSupport

/// `Scripts/cluster.sh`: every port it uses can be moved, and a server it did not start, already
/// on one of them, is never taken for its own.
@Suite("End to end: Scripts/cluster.sh", .serialized, .timeLimit(.minutes(3)))
struct ClusterScriptTests {
    /// A first port of three free consecutive ones (first, first + 1, first + 2).
    static func threeFreePorts(avoiding taken: Set<Int>) throws -> Int {
        for _ in 0..<200 {
            let first = Int.random(in: 20_000...60_000)
            let ports = first..<(first + 3)
            if ports.allSatisfy({ !taken.contains($0) && isFree($0) }) { return first }
        }
        throw TestFailure("no three free ports in a row")
    }

    static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func everyPortMovesAndAForeignServerIsNotTakenForOurs() throws {
        var taken = Set<Int>()
        var ports: [String: Int] = [:]
        for name in ["TETHER_CLUSTER_NATS_PORT", "TETHER_CLUSTER_ROUTE_PORT", "TETHER_CLUSTER_MONITOR_PORT", "TETHER_CLUSTER_BASE_PORT"] {
            let first = try Self.threeFreePorts(avoiding: taken)
            taken.formUnion(first..<(first + 3))
            ports[name] = name == "TETHER_CLUSTER_BASE_PORT" ? first - 1 : first  // tetherd nodes listen on BASE+1...BASE+3
        }
        let directory = Daemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ProcessInfo.processInfo.environment
        environment["TETHERD"] = Daemon.executable("tetherd").path
        for (name, port) in ports { environment[name] = "\(port)" }
        let script = Repository.root.appendingPathComponent("Scripts/cluster.sh")
        func cluster(_ command: String) throws -> (status: Int32, stdout: String, stderr: String) {
            try spawnAndWait(["bash", script.path, command, directory], environment: environment)
        }
        defer { _ = try? cluster("stop") }

        // Someone else's JetStream server, even named n2, on n2's client and monitoring ports.
        let nats = try #require(ports["TETHER_CLUSTER_NATS_PORT"]), monitor = try #require(ports["TETHER_CLUSTER_MONITOR_PORT"])
        let foreign = Process()
        foreign.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        foreign.arguments = ["nats-server", "-a", "127.0.0.1", "-p", "\(nats + 1)", "-m", "\(monitor + 1)", "-n", "n2", "-js", "-sd", directory + "/foreign"]
        foreign.standardOutput = FileHandle.nullDevice
        foreign.standardError = FileHandle.nullDevice
        try foreign.run()
        defer {
            if foreign.isRunning { foreign.terminate() }
            foreign.waitUntilExit()
        }
        var up = false
        for _ in 0..<100 where !up {
            up = (try? HTTP.get(port: monitor + 1, path: "/varz"))?.status == 200
            if !up { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(up, "the foreign nats-server answers")

        let refused = try cluster("start")
        #expect(refused.status != 0, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("n2") && refused.stderr.contains("\(nats + 1)"), "\(refused.stderr)")
        #expect(try cluster("status").stdout.contains("nothing started"), "a failed start leaves nothing running")
        #expect(foreign.isRunning, "the foreign server is left alone")

        foreign.terminate()
        foreign.waitUntilExit()
        let started = try cluster("start")
        #expect(started.status == 0, "\(started.stdout)\(started.stderr)")
        for i in 1...3 {
            let body = try HTTP.get(port: monitor + i - 1, path: "/varz").body  // chunked: the object inside
            let object = try #require(body.firstIndex(of: "{").flatMap { start in body.lastIndex(of: "}").map { body[start...$0] } })
            let varz = try JSONParser().parse(String(object))
            #expect(varz["server_name"] == .string("n\(i)") && varz["port"] == .int(nats + i - 1), "\(varz)")
            let node = try #require(ports["TETHER_CLUSTER_BASE_PORT"]) + i
            #expect(try HTTP.get(port: node, path: "/healthz").status == 200)
            #expect(started.stdout.contains("ws://127.0.0.1:\(node)"))
        }
        #expect(try cluster("stop").status == 0)
    }
}
