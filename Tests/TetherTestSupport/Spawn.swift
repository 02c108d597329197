import Foundation
#if canImport(Glibc)
import Glibc
#endif

public struct SpawnError: Error, CustomStringConvertible {
    public let description: String
}

/// Runs a program to completion with posix_spawn: a clean signal mask and default signal
/// handlers (Foundation's `Process` passes on the spawning thread's mask, in which a test
/// runner's threads block SIGTERM and more; a tmux server started that way would ignore
/// `kill-server`), stdin from /dev/null, stdout and stderr through files (a daemon that inherits
/// a pipe would keep it open forever), and its end learnt from `waitpid` (Foundation's `Process`
/// waits for a descriptor the program's background children inherit, so it never sees the end
/// of a script that starts daemons).
public func spawnAndWait(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let directory = FileManager.default.temporaryDirectory
    let id = UUID().uuidString
    let outPath = directory.appendingPathComponent("tether-spawn-\(id).out").path
    let errPath = directory.appendingPathComponent("tether-spawn-\(id).err").path
    defer {
        unlink(outPath)
        unlink(errPath)
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var mask = sigset_t()
    sigemptyset(&mask)
    posix_spawnattr_setsigmask(&attributes, &mask)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2, SIGWINCH] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid = pid_t()
    let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
    guard spawned == 0 else { throw SpawnError(description: "cannot run \(arguments[0]): \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw SpawnError(description: "waitpid: \(errno)") }
    }
    let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    let stdout = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    return (exitStatus, stdout, stderr)
}
