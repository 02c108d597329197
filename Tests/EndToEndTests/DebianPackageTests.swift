import Foundation
import Testing
import TetherTestSupport

/// The Debian package from `Scripts/package.sh`, installed on this machine (as root: CI's
/// throwaway machine, which `Scripts/test.sh` runs them on with `TETHER_DEB` set), used, and
/// removed again: nothing of it is left afterwards. Skipped without `TETHER_DEB`, when not
/// root, or when a tether package is installed already (an operator's machine is not touched).
@Suite("Debian package", .serialized, .enabled(if: DebianPackage.canInstall))
struct DebianPackageTests {
    static var deb: String { DebianPackage.path }

    @discardableResult
    static func sh(_ command: String, timeout: Duration = .seconds(120)) throws -> (status: Int32, stdout: String, stderr: String) {
        try DebianPackage.sh(command, timeout: timeout)
    }

    /// Installs the package for `body`, then purges it and removes the user it created.
    func withInstalledPackage(_ body: () throws -> Void) throws {
        let userExisted = try Self.sh("getent passwd tether").status == 0
        defer {
            _ = try? Self.sh("dpkg --purge tether")
            if !userExisted { _ = try? Self.sh("userdel tether; groupdel tether 2>/dev/null") }
        }
        let install = try Self.sh("dpkg --install \(Self.deb)")
        try #require(install.status == 0, "dpkg --install: \(install.stdout) \(install.stderr)")
        try body()
    }

    @Test func installRunConnectAndRemove() throws {
        try withInstalledPackage {
            for path in ["/usr/bin/tetherd", "/usr/bin/tether", "/usr/bin/tether-load", "/etc/tether/tetherd.yaml",
                         "/lib/systemd/system/tetherd.service", "/usr/share/doc/tether/copyright", "/usr/share/doc/tether/OPERATIONS.md.gz",
                         "/usr/share/man/man8/tetherd.8.gz"] {
                #expect(FileManager.default.fileExists(atPath: path), "\(path) is installed")
            }
            #expect(try Self.sh("stat -c %U:%a /var/lib/tether").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "tether:750")
            // Nothing from the Swift toolchain is needed.
            let libraries = try Self.sh("ldd /usr/bin/tetherd; readelf -d /usr/bin/tetherd")
            #expect(!libraries.stdout.contains("/opt/swift") && !libraries.stdout.contains("libswift"), "\(libraries.stdout)")
            // The packaged config checks out and the unit verifies.
            let check = try Self.sh("setpriv --reuid tether --regid tether --init-groups /usr/bin/tetherd check --config /etc/tether/tetherd.yaml")
            #expect(check.status == 0, "\(check.stderr)")
            let verify = try Self.sh("systemd-analyze verify /lib/systemd/system/tetherd.service")
            #expect(verify.status == 0, "\(verify.stderr)")

            // Run it as the service would (user tether, the packaged config, a clean
            // environment), on a free port, and connect the packaged client.
            let port = try freePort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid", "tether", "--regid", "tether", "--init-groups",
                                 "/usr/bin/tetherd", "--config", "/etc/tether/tetherd.yaml", "--port", "\(port)"]
            process.environment = ["PATH": "/usr/bin:/bin"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            var listening = ""
            let deadline = ContinuousClock.now + .seconds(20)
            while !listening.contains("listening"), ContinuousClock.now < deadline, process.isRunning {
                listening += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            }
            #expect(listening.contains("listening on ws://127.0.0.1:\(port)"), "\(listening)")
            let send = try Self.sh("env -i /usr/bin/tether send --url ws://127.0.0.1:\(port) counter increment")
            #expect(send.status == 0 && send.stdout.contains(#""type":"ack""#), "\(send.stdout) \(send.stderr)")
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            #expect(FileManager.default.fileExists(atPath: "/var/lib/tether/tether.sqlite"), "the room was kept in the packaged data directory")

            let remove = try Self.sh("dpkg --remove tether")
            #expect(remove.status == 0, "\(remove.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "/usr/bin/tetherd"))
        }
        #expect(!FileManager.default.fileExists(atPath: "/usr/bin/tetherd"))
    }

    @Test func removeKeepsTheDataAndPurgeDeletesIt() throws {
        try withInstalledPackage {
            try Self.sh("install -o tether -g tether -m 0640 /dev/null /var/lib/tether/tether.sqlite")
            #expect(try Self.sh("dpkg --remove tether").status == 0)
            #expect(FileManager.default.fileExists(atPath: "/var/lib/tether/tether.sqlite"), "remove keeps the data")
            #expect(FileManager.default.fileExists(atPath: "/etc/tether/tetherd.yaml"), "remove keeps the settings (a conffile)")
            #expect(try Self.sh("dpkg --purge tether").status == 0)
            #expect(!FileManager.default.fileExists(atPath: "/var/lib/tether"), "purge deletes the data")
            #expect(!FileManager.default.fileExists(atPath: "/etc/tether/tetherd.yaml"), "purge deletes the settings")
        }
    }
}

/// Where the package is, and whether this machine may install it.
enum DebianPackage {
    static let path = ProcessInfo.processInfo.environment["TETHER_DEB"] ?? ""

    static var canInstall: Bool {
        !path.isEmpty && geteuid() == 0 && (try? sh("dpkg-query -W -f='${Status}' tether 2>/dev/null").stdout.contains("installed")) != true
    }

    static func sh(_ command: String, timeout: Duration = .seconds(120)) throws -> (status: Int32, stdout: String, stderr: String) {
        try runProgram(URL(fileURLWithPath: "/bin/sh"), ["-c", command], timeout: timeout)
    }
}
