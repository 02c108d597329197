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

    static func send(options: ClientOptions, room: String, action: String, args: JSONArgs?, timeout: Duration) async throws {
        // The raw answer frames, to print them exactly as received: by action id, and the join's
        // refusal (an error about the room with no id).
        var answers: [Int: [UInt8]] = [:]
        var joinRefusal: [UInt8]?
        let client = try await connectedClient(options: options, timeout: timeout, label: "tether.send")
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
            let deadline = ContinuousClock.now + timeout
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
            _ = try await client.send(action, to: room, args: args?.value)
            if let raw = answers.values.first { Output.writeLine(raw) }
            await client.close()
        } catch let error as TetherClientError {
            if case .server(let refusal) = error, let id = refusal.id, let raw = answers[id] { Output.writeLine(raw) }
            await client.close()
            throw Output.actionFailure(error)
        }
    }
}
