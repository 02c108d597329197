import ArgumentParser
import Dispatch
import Logging
import TetherClient
import TetherProtocol
import TetherJSON

#if canImport(Glibc)
import Glibc
#endif

/// `tether watch` (and `tether ROOM` without a terminal): one JSON line per received frame.
@MainActor
enum Headless {
    /// Joins `room` and prints every frame until a signal, a refused join or a lost connection
    /// (which it survives when `options.reconnect` is enabled, once it has been live).
    static func watch(options: ClientOptions, room: String, helloTimeout: Duration) async throws {
        let client = TetherClient(options: options, logger: Logger(label: "tether.watch"))
        let ending = Ending()
        client.onMessage = { message, raw in
            Output.writeLine(raw)
            // A refused join: nothing more will come for this room.
            if case .error(let error) = message, error.id == nil, error.room == room,
               error.code == .unknownRoom || error.code == .unauthorized {
                ending.fail("cannot join \(room): \(Output.describe(error))", code: Output.serverError)
            }
        }
        client.onUndecodable = { error, raw in
            // Still one JSON line per message when the frame is JSON of an unknown shape.
            if (try? JSONParser().parse(raw)) != nil { Output.writeLine(raw) }
        }
        do {
            try client.connect()
        } catch {
            throw Output.failure("cannot connect to \(options.url): \(Output.describe(error))")
        }
        _ = client.room(room)

        var wasLive = false
        let stateToken = client.connectionState.bind { state in
            switch state {
            case .connecting:
                break
            case .live, .resynced:
                wasLive = true
            case .reconnecting(let attempt, let reason):
                // Only a connection that worked once is worth retrying: a wrong URL or a server
                // that is not there fails at once, for scripts.
                if wasLive {
                    Output.printError("reconnecting (attempt \(attempt)): \(reason)")
                } else {
                    ending.fail(reason)
                }
            case .closed(let reason):
                ending.fail(wasLive ? "connection lost: \(reason)" : reason)
            }
        }
        let watchdog = Task { @MainActor in
            try await Task.sleep(for: helloTimeout)
            if !wasLive { ending.fail("no hello from \(options.url) within \(helloTimeout)") }
        }
        let signals = Signals.onTermination { ending.stop() }

        let failure = await ending.wait()
        watchdog.cancel()
        stateToken.cancel()
        signals.forEach { $0.cancel() }
        await client.close()
        if let failure { throw failure }
    }
}

/// `tether send`: one action, one answer.
@MainActor
enum OneShot {
    static func send(options: ClientOptions, room: String, action: String, args: JSONArgs?, timeout: Duration) async throws {
        let client = TetherClient(options: options, logger: Logger(label: "tether.send"))
        // The raw answer frames by action id, to print them exactly as received.
        var answers: [Int: [UInt8]] = [:]
        client.onMessage = { message, raw in
            switch message {
            case .ack(let id, _, _): answers[id] = raw
            case .error(let error): if let id = error.id { answers[id] = raw }
            default: break
            }
        }
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
        do {
            try await client.waitUntilConnected()
        } catch {
            watchdog.cancel()
            throw Output.failure(Output.describe(error))
        }
        watchdog.cancel()

        // With a token the server only takes actions on joined rooms: join first.
        if options.token != nil {
            let mirror = client.room(room)
            let deadline = ContinuousClock.now + timeout
            while !mirror.isSynced, mirror.lastError.value == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            if let error = mirror.lastError.value {
                await client.close()
                throw Output.failure("cannot join \(room): \(Output.describe(error))", code: Output.serverError)
            }
        }

        do {
            _ = try await client.send(action, to: room, args: args?.value)
            if let raw = answers.values.first { Output.writeLine(raw) }
            await client.close()
        } catch TetherClientError.server(let error) {
            if let id = error.id, let raw = answers[id] { Output.writeLine(raw) }
            await client.close()
            throw Output.failure(Output.describe(error), code: Output.serverError)
        } catch {
            await client.close()
            throw Output.failure(Output.describe(error))
        }
    }
}

/// The first outcome of a long-running command: a clean stop, or a failure (printed once, when
/// it is the first outcome) to exit with.
@MainActor
private final class Ending {
    private var outcome: ExitCode??
    private var continuation: CheckedContinuation<ExitCode?, Never>?

    func stop() { finish(nil) }

    func fail(_ message: String, code: Int32 = Output.connectionFailure) {
        guard outcome == nil else { return }
        finish(Output.failure(message, code: code))
    }

    private func finish(_ failure: ExitCode?) {
        guard outcome == nil else { return }
        outcome = .some(failure)
        continuation?.resume(returning: failure)
        continuation = nil
    }

    func wait() async -> ExitCode? {
        if let outcome { return outcome }
        return await withCheckedContinuation { continuation = $0 }
    }
}

/// SIGINT and SIGTERM as a callback on the main actor, instead of the default abrupt exit.
enum Signals {
    static func onTermination(_ handler: @escaping @MainActor () -> Void) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { MainActor.assumeIsolated { handler() } }
            source.resume()
            return source
        }
    }
}
