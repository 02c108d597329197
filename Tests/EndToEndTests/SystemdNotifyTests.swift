import Foundation
import Testing
import TetherTestSupport

/// `Type=notify` against a fake notify socket: the datagrams tetherd sends systemd.
@Suite("End to end: systemd notify protocol", .serialized)
struct SystemdNotifyTests {
    /// A datagram socket bound where `NOTIFY_SOCKET` points (a path, or `@name` in the abstract
    /// namespace), collecting what arrives.
    final class FakeNotifySocket: @unchecked Sendable {
        let address: String
        private let descriptor: Int32
        private(set) var received: [String] = []

        init(abstract: Bool) throws {
            let name = "tether-notify-\(UUID().uuidString.prefix(8))"
            address = abstract ? "@" + name : NSTemporaryDirectory() + name + ".sock"
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var bytes = Array(address.utf8)
            if abstract { bytes[0] = 0 }
            var socketAddress = sockaddr_un()
            socketAddress.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: bytes) }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
            let bound = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
            }
            guard bound == 0 else { throw RawSocketError.system("bind", errno) }
        }

        deinit {
            close(descriptor)
            if !address.hasPrefix("@") { unlink(address) }
        }

        /// Reads datagrams until one satisfies `predicate` (returned) or `timeout` passes (nil).
        func await(_ timeout: Duration = .seconds(10), until predicate: (String) -> Bool) -> String? {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { continue }
                let message = String(decoding: buffer[..<count], as: UTF8.self)
                received.append(message)
                if predicate(message) { return message }
            }
            return nil
        }
    }

    @Test func readyStatusWatchdogAndStopping() throws {
        let notify = try FakeNotifySocket(abstract: true)
        let daemon = try Daemon(arguments: ["--memory-only"], environment: ["NOTIFY_SOCKET": notify.address, "WATCHDOG_USEC": "400000"])
        defer { daemon.stop() }
        // Daemon returns once the "listening" line is out; READY=1 follows it.
        let ready = notify.await { $0.contains("READY=1") }
        #expect(ready?.contains("STATUS=listening on port \(daemon.port)") == true, "READY=1 with the port: \(notify.received)")
        // Pings at half of WatchdogSec, each with the counts.
        var pings = 0
        while pings < 3, notify.await(.seconds(3), until: { $0.hasPrefix("WATCHDOG=1\n") }) != nil { pings += 1 }
        #expect(pings == 3, "three watchdog pings within seconds at WATCHDOG_USEC=400000: \(notify.received)")
        #expect(notify.received.contains { $0.contains("STATUS=0 connections, 0 rooms") })
        // The status follows the server.
        let socket = try RawWebSocket(port: daemon.port)
        _ = try socket.receiveJSON()
        try socket.sendText(#"{"type":"join","room":"counter","id":1}"#)
        _ = try socket.receiveJSON(until: { $0["type"] == "ack" })
        #expect(notify.await { $0.contains("STATUS=1 connection, 1 room") } != nil, "\(notify.received.suffix(3))")
        // SIGHUP: RELOADING=1, then READY=1 again.
        kill(daemon.pid, SIGHUP)
        #expect(notify.await { $0.hasPrefix("RELOADING=1") } != nil)
        #expect(notify.await { $0.hasPrefix("READY=1") } != nil)
        // SIGTERM: STOPPING=1, then a clean exit.
        kill(daemon.pid, SIGTERM)
        #expect(notify.await { $0.hasPrefix("STOPPING=1") } != nil, "\(notify.received.suffix(3))")
        #expect(daemon.stop() == 0)
    }

    @Test func noWatchdogPingsWithoutWatchdogSec() throws {
        let notify = try FakeNotifySocket(abstract: false)
        let daemon = try Daemon(arguments: ["--memory-only"], environment: ["NOTIFY_SOCKET": notify.address])
        defer { daemon.stop() }
        #expect(notify.await { $0.hasPrefix("READY=1") } != nil, "READY=1 on a path socket")
        kill(daemon.pid, SIGTERM)
        #expect(notify.await { $0.hasPrefix("STOPPING=1") } != nil)
        #expect(daemon.stop() == 0)
        #expect(!notify.received.contains { $0.contains("WATCHDOG=1") }, "\(notify.received)")
    }
}
