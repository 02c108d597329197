import Foundation
import TetherTestSupport

/// A Python script from Tests/HTTP run as a real counterpart (an identity provider, a webhook
/// receiver) with the PyPI packages Scripts/setup.sh puts in `.tools/py`. Each prints its port
/// as its first line once it listens.
enum PythonCounterpart {
    /// Starts `script` with `arguments`; returns the process and the port it printed, or throws
    /// saying what to install (`needs`) when no port comes within 15 s.
    static func start(_ script: URL, _ arguments: [String], needs: String) throws -> (process: Process, port: Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path] + arguments
        process.environment = ["PYTHONPATH": Repository.root.appendingPathComponent(".tools/py").path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        let deadline = ContinuousClock.now + .seconds(15)
        while !text.contains("\n"), ContinuousClock.now < deadline, process.isRunning {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { Thread.sleep(forTimeInterval: 0.02) } else { text += String(decoding: chunk, as: UTF8.self) }
        }
        guard let port = Int(text.split(separator: "\n").first ?? "") else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            throw IdentityProviderError("\(script.lastPathComponent) did not start (Scripts/setup.sh installs \(needs) into .tools/py): \(text)")
        }
        return (process, port)
    }
}
