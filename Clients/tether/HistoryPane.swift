import Foundation
import TetherClient
import TetherJSON
import TetherTUI

/// `tether inspect --history`: the room's last versions with who made them (`GET /rooms/NAME/history`,
/// as `tether history` prints them), read again when the room's version moves: at most once a
/// second, however fast the versions come.
@MainActor
final class HistoryPane {
    let list = ListView([])
    private let context: ScreenContext
    private var stale = false
    private var reading = false
    /// The version the list was read at (-1: the room's state had not come).
    private var shownVersion = Int.min
    static let shown = 20

    init(_ context: ScreenContext) {
        self.context = context
        list.isSelectable = false
        list.items = [Line("reading the history…", style: Style(dim: true))]
        context.room.observeChanges { [weak self] _ in self?.versionMoved() }.store(in: context.bag)
        versionMoved()
    }

    private func versionMoved() {
        guard (context.room.version ?? -1) != shownVersion else { return }
        stale = true
        guard !reading else { return }
        reading = true
        context.run { [weak self] in await self?.readWhileStale() }
    }

    private func readWhileStale() async {
        defer { reading = false }
        while stale {
            stale = false
            let version = context.room.version ?? -1
            await read()
            shownVersion = version
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func read() async {
        let administration = RoomAdministration(options: context.client.options, timeout: .seconds(5))
        guard let answer = try? await administration.history(room: context.room.name, query: [("limit", String(Self.shown))]) else {
            list.items = [Line("the history could not be read: the server did not answer", style: Style(dim: true))]
            return
        }
        guard answer.status == 200, let json = answer.json else {
            list.items = [Line(Self.refusal(status: answer.status, answer.errorMessage), style: Style(dim: true))]
            return
        }
        let steps = json["steps"]?.arrayValue ?? []
        list.items = steps.isEmpty ? [Line("no version kept yet", style: Style(dim: true))] : steps.map { Line(Self.line($0)) }
    }

    /// `v3  07:49:31  bob  vote {"option":"pizza"}`: narrower than `tether history`'s lines.
    static func line(_ step: JSON, timeZone: TimeZone = .current) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        formatter.timeZone = timeZone
        let when = step["at"]?.intValue.map { formatter.string(from: Date(timeIntervalSince1970: TimeInterval($0))) } ?? "-"
        return "v\(step["version"]?.intValue ?? 0)  \(when)  \(step["viewer"]?.stringValue ?? "-")  \(History.what(step))"
    }

    static func refusal(status: Int, _ message: String) -> String {
        switch status {
        case 401, 403: return "the history needs a token with the admin claim (tetherd token --admin)"
        case 404: return "no history: \(message)"
        default: return "the history could not be read: \(message)"
        }
    }
}
