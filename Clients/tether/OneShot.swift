import ArgumentParser
import Logging
import TetherClient
import TetherProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Commands that ask once and exit: `tether send`, and the connection they share with
/// `tether kinds` and `tether describe`.
@MainActor
enum OneShot {
    /// A client that got the server's hello within `timeout` (reconnecting off), or the failure
    /// to exit with.
    static func connectedClient(options: ClientOptions, timeout: Duration, label: String) async throws -> TetherClient {
        let client = TetherClient(options: options, logger: Logger(label: label))
        do {
            try client.connect()
        } catch {
            throw Output.failure("cannot connect to \(options.url): \(Output.describe(error))")
        }
        // A server that accepts the socket but never says hello must not hang a script.
        let watchdog = Task { @MainActor in
            try await Task.sleep(for: timeout)
            Output.printError("no hello from \(options.url) within \(timeout)")
            Glibc.exit(Output.connectionFailure)
        }
        defer { watchdog.cancel() }
        do {
            try await client.waitUntilConnected()
        } catch {
            throw Output.failure(Output.describe(error))
        }
        return client
    }

    /// `tether send`: waits up to `timeout` for the connection while nothing answers (a server
    /// starting or restarting) and for the answer, sending the action again after a drop, so it
    /// runs once. A connection that waiting cannot fix (TLS, host name, HTTP) fails at once.
    static func send(options: ClientOptions, room: String, action: String, args: JSONArgs?, timeout: Duration) async throws {
        var options = options
        options.reconnect.isEnabled = true
        let client = TetherClient(options: options, logger: Logger(label: "tether.send"))
        do {
            try client.connect()
        } catch {
            throw Output.failure("cannot connect to \(options.url): \(Output.describe(error))")
        }
        let deadline = ContinuousClock.now + timeout
        var everConnected = false
        let connection = client.connectionState.bind { state in
            if state.isConnected { everConnected = true }
            guard case .reconnecting(_, let reason) = state, !everConnected, !state.mayHealByWaiting else { return }
            Output.printError(reason)
            Glibc.exit(Output.connectionFailure)
        }
        defer { connection.cancel() }
        // Past the deadline a sent action's answer will not be heard. An unsent one fails just
        // before, by its own timeout, with the connection's last reason.
        let watchdog = Task { @MainActor in
            try await Task.sleep(until: deadline + .milliseconds(250))
            Output.printError("sent, but no answer within \(timeout); it may or may not have been applied")
            Glibc.exit(Output.outcomeUnknown)
        }
        defer { watchdog.cancel() }

        // The raw answer frames, to print them exactly as received: by request id, and the join's
        // refusal (an error about the room with no id).
        var answers: [Int: [UInt8]] = [:]
        var joinRefusal: [UInt8]?
        client.onMessage = { message, raw in
            switch message {
            case .ack(let id, _, _): answers[id] = raw
            case .error(let error) where error.id != nil: answers[error.id!] = raw
            case .error(let error) where error.room == room: joinRefusal = raw
            default: break
            }
        }

        // With a token the server only takes actions on joined rooms: join first.
        if options.token != nil {
            let mirror = client.room(room)
            while !mirror.isSynced, mirror.lastError.value == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            if let error = mirror.lastError.value {
                if let joinRefusal { Output.writeLine(joinRefusal) }
                await client.close()
                throw Output.failure("cannot join \(room): \(Output.describe(error)); not applied", code: Output.serverError)
            }
        }

        do {
            let version = try await client.send(action, to: room, args: args?.value, timeout: deadline - .now)
            if let raw = answers.values.first(where: { Self.isAck($0, version: version) }) { Output.writeLine(raw) }
            await client.close()
        } catch TetherClientError.notSent {
            let state = client.connectionState.value
            await client.close()
            let reason: String
            if case .reconnecting(_, let last) = state { reason = last } else { reason = "not connected (\(state))" }
            throw Output.failure("\(reason) (tried for \(timeout)); not sent, not applied", code: Output.connectionFailure)
        } catch let error as TetherClientError {
            if case .server(let refusal) = error, let id = refusal.id, let raw = answers[id] { Output.writeLine(raw) }
            await client.close()
            throw Output.actionFailure(error)
        }
    }

    /// Whether `raw` is an ack with `version` (a resent action may have had earlier, lost requests).
    private static func isAck(_ raw: [UInt8], version: Int) -> Bool {
        guard case .ack(_, _, let acked)? = try? raw.withUnsafeBytes({ try ServerMessage.decode($0) }) else { return false }
        return (acked ?? 0) == version
    }
}
