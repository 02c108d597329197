import Foundation

/// An exclusive lock on a data directory, held for the daemon's life.
///
/// Two daemons on one directory would both acknowledge versions of the same rooms and one
/// history would silently overwrite the other. `flock` on `tetherd.lock` belongs to the open
/// file, so the kernel releases it when the process dies, even by `kill -9`: a crash never
/// leaves the directory stuck. The holder's pid is written into the file for the error message.
final class DataDirectoryLock: Sendable {
    static let fileName = "tetherd.lock"

    let path: String
    private let descriptor: Int32

    /// Takes the lock or throws `.dataDirectoryInUse` naming the daemon that holds it.
    init(directory: String) throws(StartupError) {
        path = directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw .dataDirectory(directory, "cannot create \(Self.fileName): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readPID(descriptor)
            close(descriptor)
            throw .dataDirectoryInUse(directory, pid: holder)
        }
        ftruncate(descriptor, 0)
        let text = Array("\(getpid())\n".utf8)
        _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        self.descriptor = descriptor
    }

    /// Releases the lock (the process exiting does the same).
    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    private static func readPID(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
