import Foundation
import Logging
import ServiceLifecycle

/// Tells systemd how the daemon is doing (`Type=notify`), by the notify socket protocol: one
/// datagram of `KEY=VALUE` lines to the AF_UNIX socket named by `$NOTIFY_SOCKET` (a leading `@`
/// names the abstract namespace). Without `$NOTIFY_SOCKET` (not started by systemd) it does
/// nothing. Speaking the protocol directly spares a libsystemd dependency.
public struct SystemdNotifier: Sendable {
    /// The socket address, or nil when not under systemd.
    public let socketPath: String?
    /// `WatchdogSec` of the unit (`$WATCHDOG_USEC`), when it applies to this process.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forUs, let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 {
            watchdogInterval = .microseconds(microseconds)
        } else {
            watchdogInterval = nil
        }
    }

    public var isActive: Bool { socketPath != nil }

    /// Sends `state` ("READY=1", "STATUS=...", several joined by newlines). Returns whether the
    /// datagram went out (false when not under systemd or the socket is gone).
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard let socketPath else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path)
        }
        // Abstract names are exactly their bytes long; file names end at their NUL.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
        return sent == message.count
    }
}

/// The counts a status line shows.
public struct ServerStatus: Sendable, Equatable {
    public var connections: Int
    public var rooms: Int

    /// "12 connections, 3 rooms".
    public var summary: String { "\(connections) connection\(connections == 1 ? "" : "s"), \(rooms) room\(rooms == 1 ? "" : "s")" }
}

extension TetherServer {
    /// Calls `report` with the live counts once every socket thread has turned: the call passes
    /// through each shard's hub queue in turn. Nothing happens when one of them does not run, or
    /// is stuck: a watchdog ping sent from `report` proves that every one still turns.
    public func withStatus(_ report: @escaping @Sendable (ServerStatus) -> Void) {
        Self.visit(hubs[...], then: report)
    }

    private static func visit(_ hubs: ArraySlice<SessionHub>, then report: @escaping @Sendable (ServerStatus) -> Void) {
        guard let hub = hubs.first else { return }
        hub.queue.execute {
            if hubs.count == 1 {
                report(ServerStatus(connections: hub.openConnections, rooms: hub.rooms.roomCount))
            } else {
                visit(hubs.dropFirst(), then: report)
            }
        }
    }
}

/// Keeps systemd informed while the server runs: a `STATUS=` line with connections and rooms
/// every `statusInterval`, `WATCHDOG=1` at half the unit's `WatchdogSec` (both sent from the
/// hub's queue, so a hung socket thread stops the pings and systemd restarts the daemon), and
/// `STOPPING=1` when the group begins its graceful shutdown. `READY=1` is the caller's to send,
/// once the server listens.
public struct SystemdNotifierService: Service {
    let notifier: SystemdNotifier
    let server: TetherServer
    let statusInterval: Duration

    public init(notifier: SystemdNotifier, server: TetherServer, statusInterval: Duration = .seconds(10)) {
        self.notifier = notifier
        self.server = server
        self.statusInterval = statusInterval
    }

    public func run() async throws {
        guard notifier.isActive else {
            try? await gracefulShutdown()
            return
        }
        let interval = notifier.watchdogInterval.map { min($0 / 2, statusInterval) } ?? statusInterval
        let notifier = self.notifier
        let pingsWatchdog = notifier.watchdogInterval != nil
        let server = self.server
        await withGracefulShutdownHandler {
            try? await cancelWhenGracefulShutdown {
                while true {
                    server.withStatus { status in
                        notifier.notify((pingsWatchdog ? "WATCHDOG=1\n" : "") + "STATUS=\(status.summary)")
                    }
                    try await Task.sleep(for: interval)
                }
            }
        } onGracefulShutdown: {
            notifier.notify("STOPPING=1\nSTATUS=shutting down")
        }
    }
}
