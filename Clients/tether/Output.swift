import ArgumentParser
import Logging
import TetherClient
import TetherProtocol
import TetherJSON
import TetherTUI

#if canImport(Glibc)
import Glibc
#endif

/// Writing lines for scripts, one-line failures, and the exit codes every command shares.
enum Output {
    /// The connection failed: unreachable, handshake refused, bad URL, no answer in time.
    static let connectionFailure: Int32 = 1
    /// The server answered with an error (for an action: one that says it was not applied).
    static let serverError: Int32 = 2
    /// An action's outcome is unknown: it was sent, then no answer came in time, the connection
    /// dropped, or the server's error says it may have been applied.
    static let outcomeUnknown: Int32 = 3

    /// Writes `bytes` and a newline to stdout at once (no buffering: a script reading a pipe sees
    /// each line as it arrives). A reader that went away ends the process quietly.
    static func writeLine(_ bytes: [UInt8]) {
        var line = bytes
        // A frame is one JSON object; should a server pretty-print it, re-encode it onto one line.
        if line.contains(where: { $0 == 0x0A || $0 == 0x0D }), let json = try? JSONParser().parse(line) {
            line = json.encoded()
        }
        line.append(0x0A)
        if !TetherTUI.writeAll(line, to: STDOUT_FILENO) { Glibc.exit(0) }
    }

    /// One line on stderr, prefixed with "tether: ", newlines folded.
    static func printError(_ message: String) {
        let text = "tether: " + message.split(whereSeparator: \.isNewline).joined(separator: " ") + "\n"
        TetherTUI.writeAll(Array(text.utf8), to: STDERR_FILENO)
    }

    /// Prints `message` on stderr and returns the error that makes the command exit with `code`.
    static func failure(_ message: String, code: Int32 = connectionFailure) -> ExitCode {
        printError(message)
        return ExitCode(code)
    }

    /// Process set-up for every command: logs go to stderr at `level`, or nowhere for nil (an
    /// interactive screen owns the terminal); SIGPIPE is ignored, so a reader that goes away is a
    /// failed write, not a crash.
    static func prepareProcess(logLevel level: Logger.Level?) {
        signal(SIGPIPE, SIG_IGN)
        LoggingSystem.bootstrap { label in
            guard let level else { return SwiftLogNoOpLogHandler() }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// A failed action as one line that says whether it was applied, and the exit code that
    /// tells a script the same: 1 not sent, 2 refused (not applied), 3 it may have been applied.
    static func actionFailure(_ error: TetherClientError) -> ExitCode {
        switch error {
        case .notConnected(let reason), .notSent(let reason): return failure("not sent (\(reason)); not applied", code: connectionFailure)
        case _ where error.applied == .no: return failure(describe(error) + "; not applied", code: serverError)
        default: return failure(describe(error) + "; it may or may not have been applied", code: outcomeUnknown)
        }
    }

    /// A client error as one short line.
    static func describe(_ error: any Error) -> String {
        switch error {
        case TetherClientError.server(let error): return "\(error.code.rawValue): \(AuthAdvice.message(for: error))"
        case TetherClientError.notConnected(let reason): return reason
        case let error as TetherClientError: return error.description
        case let error as ProtocolError: return "\(error.code.rawValue): \(AuthAdvice.message(for: error))"
        default: return "\(error)"
        }
    }
}

/// The JSON-ARGS of `tether send`: a JSON object.
struct JSONArgs: Sendable {
    let value: JSON

    init(parsing text: String) throws {
        let json: JSON
        do {
            json = try JSONParser().parse(text)
        } catch {
            throw ValidationError("JSON-ARGS is not valid JSON (\(error)): \(text)")
        }
        guard case .object = json else {
            throw ValidationError("JSON-ARGS must be a JSON object, like '{\"by\":2}'; got \(json.typeName): \(text)")
        }
        value = json
    }
}
