import Foundation
import TetherJSON

/// Real `nats-server` processes with JetStream for tests: 1 standalone server or a cluster of 3,
/// on 127.0.0.1 with free ports and temporary store directories. `init` returns once every server
/// is healthy and (clustered) agrees on a JetStream meta leader. `stop()` (or `deinit`) kills
/// them all and removes their directories. Single servers can be killed (-9), paused
/// (SIGSTOP/SIGCONT) and restarted in place (same ports and store) for failover tests.
///
/// The binary is `TETHER_NATS_SERVER` when set (Scripts/setup.sh installs a current one at
/// .tools/nats-current/bin/nats-server), else the `nats-server` on PATH (Debian's). JetStream
/// fsyncs every write (`sync_interval: always`) where the version has the setting (2.10 on).
public final class NATSCluster: @unchecked Sendable {
    // @unchecked: servers' processes are only replaced by the test driving the cluster.

    public final class Server: @unchecked Sendable {
        public let name: String
        public let port: Int
        public let clusterPort: Int
        public let monitorPort: Int
        public let configPath: String
        public let logPath: String
        public fileprivate(set) var process: Process?
        fileprivate(set) public var paused = false

        fileprivate init(name: String, port: Int, clusterPort: Int, monitorPort: Int, directory: String) {
            self.name = name
            self.port = port
            self.clusterPort = clusterPort
            self.monitorPort = monitorPort
            configPath = "\(directory)/\(name).conf"
            logPath = "\(directory)/\(name).log"
        }

        public var url: String { "nats://127.0.0.1:\(port)" }
        public var isRunning: Bool { process?.isRunning ?? false }
        public var pid: Int32? { process?.processIdentifier }

        /// The server's log so far.
        public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    }

    public let servers: [Server]
    public let directory: String

    /// Every server's client URL.
    public var urls: [String] { servers.map(\.url) }
    /// Every server's monitoring endpoint (`http://127.0.0.1:port`).
    public var monitoringURLs: [String] { servers.map { "http://127.0.0.1:\($0.monitorPort)" } }
    /// Whether JetStream fsyncs every write (the binary has `sync_interval` and `syncAlways` asked for it).
    public let syncsEveryWrite: Bool

    /// Starts `size` servers (1: standalone JetStream; more: one cluster named `tether`) and waits
    /// until they are ready.
    /// `syncAlways`: `sync_interval: always` where the binary has it (false: JetStream's default).
    public init(size: Int = 3, syncAlways: Bool = true, timeout: Duration = .seconds(30)) throws {
        precondition(size >= 1)
        syncsEveryWrite = syncAlways && Self.syncIntervalSupported
        directory = NSTemporaryDirectory() + "tether-nats-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let ports = try freePorts(3 * size)
        let directory = directory
        let servers = (0..<size).map { index in
            Server(name: "n\(index + 1)", port: ports[3 * index], clusterPort: ports[3 * index + 1],
                   monitorPort: ports[3 * index + 2], directory: directory)
        }
        self.servers = servers
        let routes = servers.map { "nats-route://127.0.0.1:\($0.clusterPort)" }.joined(separator: ", ")
        for server in servers {
            var config = """
            server_name: \(server.name)
            listen: 127.0.0.1:\(server.port)
            http: 127.0.0.1:\(server.monitorPort)
            jetstream { store_dir: "\(directory)/\(server.name)"\(syncsEveryWrite ? ", sync_interval: always" : "") }

            """
            if size > 1 {
                config += "cluster { name: tether, listen: 127.0.0.1:\(server.clusterPort), routes: [\(routes)] }\n"
            }
            try config.write(toFile: server.configPath, atomically: true, encoding: .utf8)
        }
        do {
            for server in servers { try launch(server) }
            try waitUntilReady(timeout: timeout)
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    public func server(_ name: String) -> Server {
        guard let server = servers.first(where: { $0.name == name }) else { fatalError("no NATS server \(name)") }
        return server
    }

    private func launch(_ server: Server) throws {
        if !FileManager.default.fileExists(atPath: server.logPath) { _ = FileManager.default.createFile(atPath: server.logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: server.logPath))
        log.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executablePath())
        process.arguments = ["-c", server.configPath]
        process.standardOutput = log
        process.standardError = log
        try process.run()
        try? log.close()
        server.process = process
        server.paused = false
    }

    static func executablePath() -> String {
        if let chosen = ProcessInfo.processInfo.environment["TETHER_NATS_SERVER"], !chosen.isEmpty { return chosen }
        let candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/usr/sbin")
            .split(separator: ":").map { "\($0)/nats-server" } + ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? "nats-server"
    }

    /// The binary's version (`nats-server --version`: "nats-server: v2.15.1").
    public static func version() -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executablePath())
        process.arguments = ["--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return "" }
        process.waitUntilExit()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return text.split(separator: "v").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
    }

    /// Whether the binary has `sync_interval` (nats-server 2.10 on).
    public static let syncIntervalSupported = supportsSyncInterval()

    static func supportsSyncInterval() -> Bool {
        let parts = version().split(separator: ".").compactMap { Int($0) }
        guard parts.count >= 2 else { return false }
        return parts[0] > 2 || (parts[0] == 2 && parts[1] >= 10)
    }

    /// Waits until every running, unpaused server answers `/healthz` with 200 and (clustered)
    /// names a JetStream meta leader in `/jsz`.
    public func waitUntilReady(timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        var lastProblem = ""
        while ContinuousClock.now < deadline {
            lastProblem = ""
            for server in servers where server.process != nil && !server.paused {
                guard server.isRunning else {
                    throw NATSClusterError.serverExited(server.name, log: server.log)
                }
                if let problem = readinessProblem(server) {
                    lastProblem = "\(server.name): \(problem)"
                    break
                }
            }
            if lastProblem.isEmpty { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw NATSClusterError.notReady(lastProblem)
    }

    private func readinessProblem(_ server: Server) -> String? {
        guard let health = try? HTTP.get(port: server.monitorPort, path: "/healthz") else { return "monitoring port not answering" }
        guard health.status == 200 else { return "healthz \(health.status) \(health.body)" }
        guard servers.count > 1 else { return nil }
        guard let json = try? jsz(server), let meta = json["meta_cluster"],
              let leader = meta["leader"]?.stringValue, !leader.isEmpty else { return "no JetStream meta leader yet" }
        // nats-server 2.10 on refuses to place an R3 stream until the meta group knows every peer
        // ("no suitable peers for placement"); the leader lists its followers with `current`.
        if leader == server.name, let replicas = meta["replicas"]?.arrayValue,
           replicas.count < servers.count - 1 || replicas.contains(where: { $0["current"]?.boolValue == false }) {
            return "JetStream meta group not complete yet"
        }
        return nil
    }

    /// `/jsz` of a server, parsed.
    public func jsz(_ server: Server, query: String = "") throws -> JSON {
        let response = try HTTP.get(port: server.monitorPort, path: "/jsz" + query)
        return try JSON(parsing: response.body)
    }

    /// The JetStream meta leader as `server` sees it.
    public func metaLeader(_ server: Server) -> String? {
        guard let json = try? jsz(server), let leader = json["meta_cluster"]?["leader"]?.stringValue,
              !leader.isEmpty else { return nil }
        return leader
    }

    /// SIGKILL one server (a crash). Its store stays for `restart`.
    public func kill9(_ server: Server) {
        guard let process = server.process, process.isRunning else { return }
        if server.paused { kill(process.processIdentifier, SIGCONT) }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        server.paused = false
    }

    /// SIGSTOP: the server stops answering but keeps its sockets open.
    public func pause(_ server: Server) {
        guard let process = server.process, process.isRunning else { return }
        kill(process.processIdentifier, SIGSTOP)
        server.paused = true
    }

    /// SIGCONT after `pause`.
    public func resume(_ server: Server) {
        guard let process = server.process, process.isRunning else { return }
        kill(process.processIdentifier, SIGCONT)
        server.paused = false
    }

    /// Starts a killed server again on its ports and store, and waits until the cluster is ready.
    public func restart(_ server: Server, timeout: Duration = .seconds(30)) throws {
        if server.isRunning { kill9(server) }
        try launch(server)
        try waitUntilReady(timeout: timeout)
    }

    /// Kills every server and removes the directory. Safe to call twice.
    public func stop() {
        for server in servers { kill9(server) }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

public enum NATSClusterError: Error, CustomStringConvertible {
    case serverExited(String, log: String)
    case notReady(String)

    public var description: String {
        switch self {
        case .serverExited(let name, let log): return "nats-server \(name) exited:\n\(log)"
        case .notReady(let problem): return "NATS cluster not ready in time: \(problem)"
        }
    }
}
