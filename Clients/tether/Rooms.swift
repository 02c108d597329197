import ArgumentParser
import Foundation
import TetherClient
import TetherJSON

/// `tether rooms` and `tether rooms delete NAME`: the daemon's room administration, through its
/// HTTP side (`GET /rooms`, `DELETE /rooms/NAME`).
struct Rooms: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List every room of the server, in memory and stored; `tether rooms delete NAME` deletes one.",
        discussion: """
            Asks the daemon's HTTP side (GET /rooms on the port of --url). A server with token \
            secrets needs a token with the admin claim (tetherd token --admin), given as for any \
            command: --token-file, --token or $TETHER_TOKEN.

            Exits 2 when the server refuses (no admin token, no such room), 1 when it cannot be \
            reached.
            """,
        subcommands: [List.self, Delete.self],
        defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List every room: kind, whether in memory, subscribers, version, size, last change (the default).",
            discussion: """
                One line per room, sorted by name; per-session kinds (login) are one line with \
                their number of private instances. SIZE is the room's state as JSON (estimated \
                while in memory). A room no longer in memory is kept in the database until \
                deleted, or until its kind's expiry (tetherd --room-expiry).
                """)

        @OptionGroup var connection: ConnectionOptions

        @Flag(help: "Print the server's answer as one JSON line: {\"rooms\": [{name, kind, scope, subscribers, inMemory, version, epoch, bytes, lastChange, instances}, ...]}.")
        var json = false

        func run() async throws {
            Output.prepareProcess(logLevel: connection.logLevel)
            let answer = try await RoomsCommand.ask(connection) { try await $0.list() }
            if json {
                Output.writeLine(answer.body)
                return
            }
            let rooms = answer.json?["rooms"]?.arrayValue ?? []
            for line in RoomsCommand.table(rooms, now: Int(Date().timeIntervalSince1970)) { Output.writeLine(Array(line.utf8)) }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a room: from memory (its subscribers get room_deleted) and from storage.",
            discussion: """
                The room's state and history are gone; joining the name again makes a new, empty \
                room. Clients that had joined it get the error room_deleted and stop following \
                it (docs/PROTOCOL.md). Not supported on a cluster yet: the server answers so.
                Example: tether rooms delete todo:old-team
                """)

        @OptionGroup var connection: ConnectionOptions

        @Flag(help: "Print the server's answer as one JSON line.")
        var json = false

        @Argument(help: "The room: KIND or KIND:INSTANCE.")
        var room: String

        func run() async throws {
            Output.prepareProcess(logLevel: connection.logLevel)
            let answer = try await RoomsCommand.ask(connection, about: room) { try await $0.delete(room: room) }
            if json {
                Output.writeLine(answer.body)
                return
            }
            let wasInMemory = answer.json?["wasInMemory"] == true
            let subscribers = answer.json?["subscribers"]?.intValue ?? 0
            let detail = wasInMemory ? "it was in memory; \(subscribers) subscriber\(subscribers == 1 ? "" : "s") told" : "it was stored only"
            Output.writeLine(Array("deleted \(room) (\(detail))".utf8))
        }
    }
}

enum RoomsCommand {
    /// The server's answer when it is a success; else the failure to exit with (the server's
    /// own sentence on stderr).
    static func ask(_ connection: ConnectionOptions, about room: String? = nil,
                    _ request: (RoomAdministration) async throws -> RoomAdministration.Answer) async throws -> RoomAdministration.Answer {
        let options = try connection.clientOptions(reconnect: false)
        let administration = RoomAdministration(options: options, timeout: connection.timeoutDuration)
        let answer: RoomAdministration.Answer
        do {
            answer = try await request(administration)
        } catch {
            throw Output.failure("cannot reach \(options.urls[0]): \(Output.describe(error))")
        }
        guard answer.status == 200 else {
            let what = room.map { "cannot delete \($0)" } ?? "cannot list the rooms"
            var reason = AuthAdvice.roomAdministration(status: answer.status, serverReason: answer.errorMessage, hadToken: options.token != nil)
            if answer.status == 404, room == nil { reason = "this server has no room administration (GET /rooms answered 404): it is older than this client" }
            throw Output.failure("\(what): \(reason)", code: Output.serverError)
        }
        return answer
    }

    /// The rooms as a table for people: a header, one line per room, a summary.
    static func table(_ rooms: [JSON], now: Int) -> [String] {
        let header = ["ROOM", "KIND", "IN MEMORY", "SUBSCRIBERS", "VERSION", "SIZE", "LAST CHANGE"]
        let rows = rooms.map { room -> [String] in
            let perSession = room["scope"] == "per-session"
            let instances = room["instances"]?.intValue ?? 0
            return [
                room["name"]?.stringValue ?? "?",
                room["kind"]?.stringValue ?? "?",
                room["inMemory"] == true ? (perSession ? "yes (\(instances) private)" : "yes") : "no",
                String(room["subscribers"]?.intValue ?? 0),
                room["version"]?.intValue.map(String.init) ?? "-",
                room["bytes"]?.intValue.map(bytes) ?? "-",
                room["lastChange"]?.intValue.map { age($0, now: now) } ?? "-",
            ]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        let numeric: Set<Int> = [3, 4, 5]
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, text in
                let padding = String(repeating: " ", count: widths[column] - text.count)
                return numeric.contains(column) ? padding + text : text + padding
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        let inMemory = rooms.filter { $0["inMemory"] == true }.count
        let summary = "\(rooms.count) room\(rooms.count == 1 ? "" : "s"): \(inMemory) in memory, \(rooms.count - inMemory) stored only"
        return [line(header)] + rows.map(line) + [summary]
    }

    /// "812 B", "4.2 KB", "1.3 MB".
    static func bytes(_ count: Int) -> String {
        if count < 1_000 { return "\(count) B" }
        if count < 1_000_000 { return String(format: "%.1f KB", Double(count) / 1_000) }
        return String(format: "%.1f MB", Double(count) / 1_000_000)
    }

    /// "2026-11-24 10:31 (3 days ago)", in local time.
    static func age(_ seconds: Int, now: Int) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        let when = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        let elapsed = max(0, now - seconds)
        let ago: String
        switch elapsed {
        case ..<60: ago = "just now"
        case ..<3_600: ago = "\(elapsed / 60) min ago"
        case ..<86_400: ago = "\(elapsed / 3_600) h ago"
        default: ago = "\(elapsed / 86_400) day\(elapsed / 86_400 == 1 ? "" : "s") ago"
        }
        return "\(when) (\(ago))"
    }
}
