import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TetherJSON
import TetherTUI
import TetherTestSupport

/// The built `tether` client, next to `tetherd`.
let tetherExecutable = Daemon.executable("tether")

/// A UTF-8 locale and a known terminal for everything the tests start.
let testEnvironment: [String: String] = {
    var environment = ProcessInfo.processInfo.environment
    environment["LANG"] = "C.UTF-8"
    environment["LC_ALL"] = "C.UTF-8"
    environment["TERM"] = "xterm-256color"
    environment.removeValue(forKey: "TMUX")
    for name in ["TETHER_URL", "TETHER_TOKEN"] { environment.removeValue(forKey: name) }  // tests set them when they mean to
    return environment
}()

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child process whose stdout and stderr are collected as they come (reader threads, so a
/// chatty child never blocks on a full pipe). Killed on deinit if still running.
final class ChildProcess: @unchecked Sendable {  // mutable state is behind `lock`
    let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private let readers = DispatchGroup()

    init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.environment = testEnvironment.merging(environment) { $1 }
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        collect(stdout.fileHandleForReading) { self.out.append($0) }
        collect(stderr.fileHandleForReading) { self.err.append($0) }
    }

    private func collect(_ handle: FileHandle, into append: @escaping @Sendable (Data) -> Void) {
        readers.enter()
        let thread = Thread { [lock, readers] in
            // Plain read(2): FileHandle.availableData traps on EINTR.
            let fd = handle.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                let chunk = Data(buffer[0..<n])
                lock.withLock { append(chunk) }
            }
            readers.leave()
        }
        thread.start()
    }

    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }
    var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    var isRunning: Bool { process.isRunning }

    /// Waits for the exit (and the end of its output); nil if it is still running after `timeout`.
    func waitForExit(timeout: Duration = .seconds(15)) async throws -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else { return nil }
            try await Task.sleep(for: .milliseconds(20))
        }
        _ = readers.wait(timeout: .now() + 5)
        return process.terminationStatus
    }

    /// Waits until `condition` holds for the output so far; throws with the output on timeout.
    func waitForOutput(_ what: String, timeout: Duration = .seconds(10), _ condition: (ChildProcess) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(self) {
            guard ContinuousClock.now < deadline else {
                throw TestFailure("timed out waiting for \(what)\nstdout:\n\(stdout)\nstderr:\n\(stderr)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func signal(_ number: Int32) {
        if process.isRunning { kill(process.processIdentifier, number) }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Runs `tether ARGUMENTS` to completion (killed after `timeout`): status, stdout, stderr.
/// `environment` adds to (or replaces in) the test environment.
func runTether(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(20)) async throws -> (status: Int32, stdout: String, stderr: String) {
    let child = try ChildProcess(tetherExecutable, arguments, environment: environment)
    guard let status = try await child.waitForExit(timeout: timeout) else {
        child.signal(SIGKILL)
        throw TestFailure("tether \(arguments.joined(separator: " ")) did not exit within \(timeout)\nstdout:\n\(child.stdout)\nstderr:\n\(child.stderr)")
    }
    return (status, child.stdout, child.stderr)
}


/// The JSON object on each line, failing on a line that is not one.
func jsonLines(_ text: String) throws -> [JSON] {
    try text.split(separator: "\n").map { line in
        let json = try JSONParser().parse(String(line))
        guard case .object = json else { throw TestFailure("not a JSON object: \(line)") }
        return json
    }
}

/// A private tmux server (its own socket file, no status line, fixed window size) for driving `tether`
/// on a real terminal and reading the screen back with `capture-pane`. `kill()` it in a defer.
final class Tmux {
    /// Names the server's socket, config and status files (all in the temporary directory).
    let socket = "tether-tmux-\(UUID().uuidString.prefix(13))"
    let width: Int
    let height: Int
    private let configuration: URL

    private var socketPath: String { FileManager.default.temporaryDirectory.appendingPathComponent("\(socket).sock").path }

    init(width: Int = 100, height: Int = 40) throws {
        self.width = width
        self.height = height
        configuration = FileManager.default.temporaryDirectory.appendingPathComponent("\(socket).conf")
        // Panes stay after their program exits, so a test can read the exit status and what the
        // terminal shows afterwards.
        try """
            set -g status off
            set -g remain-on-exit on
            set -g default-terminal xterm-256color
            set -g history-limit 1000
            """.write(to: configuration, atomically: true, encoding: .utf8)
    }

    /// Runs tmux with `arguments` on this server; returns its stdout, throws on failure.
    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        let result = try spawnAndWait(["tmux", "-S", socketPath, "-f", configuration.path] + arguments, environment: testEnvironment)
        guard result.status == 0 else {
            throw TestFailure("tmux \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout
    }

    /// Opens session `name` running `tether ARGUMENTS` in a `width`×`height` window.
    ///
    /// A small shell runs it and writes its exit status to a file: tmux's own `pane_dead_status`
    /// is sometimes never filled in when the program exits right after a Ctrl-C. The shell
    /// survives Ctrl-C (`trap :`, a no-op handler, leaves the default action in the child).
    func startTether(_ name: String, _ arguments: [String]) throws {
        let command = ([tetherExecutable.path] + arguments).map(Self.shellQuoted).joined(separator: " ")
        let script = "trap : INT HUP TERM; \(command); echo $? > \(Self.shellQuoted(statusFile(name).path))"
        try run([
            "new-session", "-d", "-s", name, "-x", "\(width)", "-y", "\(height)",
            "-e", "LANG=C.UTF-8", "-e", "LC_ALL=C.UTF-8", "sh -c \(Self.shellQuoted(script))",
        ])
    }

    private func statusFile(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(socket)-\(name).status")
    }

    /// What the pane shows now, one string per row.
    func capture(_ name: String) throws -> String {
        try run(["capture-pane", "-p", "-t", name])
    }

    /// Presses keys by tmux name ("Enter", "Tab", "BTab", "C-c", "DC", "Up", ...).
    func press(_ name: String, _ keys: String...) throws {
        try run(["send-keys", "-t", name] + keys)
    }

    /// Types `text` literally.
    func type(_ name: String, _ text: String) throws {
        try run(["send-keys", "-t", name, "-l", text])
    }

    /// Polls the pane every 100 ms until `condition` holds for its text; returns that text.
    /// On timeout, throws with the screen as it was.
    @discardableResult
    func waitFor(_ name: String, _ what: String, timeout: Duration = .seconds(10), _ condition: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        var screen = ""
        while true {
            screen = (try? capture(name)) ?? ""
            if condition(screen) { return screen }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("timed out waiting for \(what) in tmux session \(name); the screen:\n\(screen)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The exit status once `tether` in session `name` has exited; nil while it runs.
    func exitStatus(_ name: String) throws -> Int32? {
        guard let text = try? String(contentsOf: statusFile(name), encoding: .utf8) else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func waitForExit(_ name: String, timeout: Duration = .seconds(10)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = try exitStatus(name) { return status }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("tether in tmux session \(name) did not exit; the screen:\n\((try? capture(name)) ?? "")")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Stops the tmux server (and with it every program in its panes); SIGKILL if it lingers.
    func kill() {
        let pid = (try? run(["display-message", "-p", "#{pid}"])).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        _ = try? run(["kill-server"])
        if let pid {
            let deadline = ContinuousClock.now + .seconds(3)
            while Glibc.kill(pid, 0) == 0, ContinuousClock.now < deadline { usleep(20_000) }
            if Glibc.kill(pid, 0) == 0 { Glibc.kill(pid, SIGKILL) }
        }
        try? FileManager.default.removeItem(at: configuration)
        let directory = FileManager.default.temporaryDirectory
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where file.hasPrefix(socket) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(file))
        }
    }

    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

extension String {
    /// The rows of a captured screen.
    var rows: [String] { split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }

    /// The version the status bar shows ("● live │ room counter │ v3 │ 1.2 ms"), if any.
    var statusVersion: Int? {
        guard let status = rows.last(where: { $0.hasPrefix("● ") }) else { return nil }
        for field in status.components(separatedBy: " │ ") where field.hasPrefix("v") {
            if let version = Int(field.dropFirst().trimmingCharacters(in: .whitespaces)) { return version }
        }
        return nil
    }

    /// The status bar's connection text ("live", "reconnecting (attempt 3)", ...).
    var statusConnection: String? {
        guard let status = rows.last(where: { $0.hasPrefix("● ") }) else { return nil }
        return status.dropFirst(2).components(separatedBy: " │ ").first?.trimmingCharacters(in: .whitespaces)
    }
}
