import ArgumentParser
import Logging
import TetherBinding
import TetherClient
import TetherJSON
import TetherProtocol

/// `tether watch` (and `tether ROOM` without a terminal): one JSON line per received frame, or
/// per rebuilt state.
@MainActor
enum Headless {
    struct Mode {
        enum Limit {
            /// Stop after this many snapshots and patches.
            case messages(Int)
            /// Stop once every room has had one.
            case oncePerRoom
        }

        /// Print `{"room","epoch","version","state"}` after each snapshot or patch, not the frames.
        var printsState = false
        var limit: Limit?
        /// Resume the (single) room after this point.
        var since: ResumePoint?
    }

    /// Joins `rooms` and prints until a signal, the limit, a refused join or a lost connection
    /// (which it survives when `options.reconnect` is enabled, once it has been live).
    static func watch(options: ClientOptions, rooms: [String], helloTimeout: Duration, mode: Mode = Mode()) async throws {
        let client = TetherClient(options: options, logger: Logger(label: "tether.watch"))
        let ending = Ending()
        let watched = Set(rooms)
        var delivered = 0
        var roomsDelivered: Set<String> = []
        /// Counts one snapshot or patch of `room` toward the limit.
        func count(_ room: String) {
            delivered += 1
            roomsDelivered.insert(room)
            switch mode.limit {
            case .messages(let limit) where delivered >= limit: ending.stop()
            case .oncePerRoom where roomsDelivered == watched: ending.stop()
            default: break
            }
        }
        client.onMessage = { message, raw in
            if !mode.printsState { Output.writeLine(raw) }
            switch message {
            case .snapshot(let room, _, _, _), .patch(let room, _, _, _, _):
                if !mode.printsState, watched.contains(room) { count(room) }
            case .error(let error) where error.id == nil && error.room.map(watched.contains) == true:
                // A refused join, or a deleted room: nothing more will come for this room.
                if mode.printsState { Output.writeLine(raw) }
                let what = error.code == .roomDeleted ? "\(error.room ?? "?") was deleted" : "cannot join \(error.room ?? "?")"
                ending.fail("\(what): \(Output.describe(error))", code: Output.serverError)
            default:
                break
            }
        }
        client.onUndecodable = { _, raw in
            // Still one JSON line per message when the frame is JSON of an unknown shape.
            if !mode.printsState, (try? JSONParser().parse(raw)) != nil { Output.writeLine(raw) }
        }
        do {
            try client.connect()
        } catch {
            throw Output.failure("cannot connect to \(options.url): \(Output.describe(error))")
        }
        var tokens: [Cancellable] = []
        for name in rooms {
            let room = client.room(name, since: mode.since)
            guard mode.printsState else { continue }
            tokens.append(room.observeChanges { [unowned room] _ in
                guard let epoch = room.epoch, let version = room.version else { return }
                let line: JSON = ["room": .string(room.name), "epoch": .string(epoch), "version": .int(version), "state": room.state]
                Output.writeLine(line.encoded())
                count(room.name)
            })
        }

        var wasLive = false
        tokens.append(client.connectionState.bind { state in
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
        })
        let watchdog = Task { @MainActor in
            try await Task.sleep(for: helloTimeout)
            if !wasLive { ending.fail("no hello from \(options.url) within \(helloTimeout)") }
        }
        let signals = Signals.onTermination { ending.stop() }

        let failure = await ending.wait()
        watchdog.cancel()
        tokens.forEach { $0.cancel() }
        signals.forEach { $0.cancel() }
        await client.close()
        if let failure { throw failure }
    }
}
