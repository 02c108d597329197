import TetherClient
import TetherJSON
import TetherTUI

/// Any other room (bench, or a kind without its own screen): the state as an indented JSON tree,
/// live, with the paths the last patch touched marked "»" and highlighted.
@MainActor
final class Inspector: Screen {
    let body: Widget
    let hints = "↑/↓/PgUp/PgDn scroll · » marks what the last patch changed"

    init(_ context: ScreenContext) {
        let room = context.room
        let header = Label("")
        let lastPatch = Label("", style: Style(fg: .yellow))
        let tree = ListView([])
        let render = {
            guard let version = room.version else {
                header.text = "waiting for the snapshot…"
                return
            }
            header.text = "kind \(Screens.kind(of: room.name)) · version \(version) · epoch \(room.epoch ?? "-")"
            tree.items = JSONTree.lines(room.state, changed: room.lastChangedPaths)
        }
        render()
        room.observeChanges { change in
            switch change {
            case .snapshot(let version, let resynced):
                lastPatch.text = resynced ? "snapshot at v\(version) (resynced)" : "snapshot at v\(version)"
            case .patch(let from, let version, let operations):
                let summary = operations.map { "\($0.name) \($0.path)" }.joined(separator: ", ")
                lastPatch.text = "patch v\(from)→v\(version): \(summary)"
            }
            render()
        }.store(in: context.bag)
        let treeBox = Box(title: "State", tree)
        let stack = Stack(.vertical, [header, lastPatch, treeBox])
        stack.setSize(.fill(), of: treeBox)
        body = stack
    }
}

/// Pretty-printed JSON, one `Line` per row, marking the rows at or below a changed path.
enum JSONTree {
    static let changedStyle = Style(fg: .yellow, bold: true)

    static func lines(_ json: JSON, changed: [JSONPointer]) -> [Line] {
        var out: [Line] = []
        append(json, key: nil, path: .root, depth: 0, comma: false, changed: changed, to: &out)
        return out
    }

    private static func append(_ json: JSON, key: String?, path: JSONPointer, depth: Int, comma: Bool, changed: [JSONPointer], to out: inout [Line]) {
        let isChanged = changed.contains { $0.isPrefix(of: path) }
        func emit(_ text: String) {
            let indent = String(repeating: "  ", count: depth)
            out.append(isChanged ? Line([Span("» ", style: changedStyle), Span(indent + text, style: changedStyle)]) : Line("  " + indent + text))
        }
        let prefix = key.map { JSON.string($0).jsonString + ": " } ?? ""
        let tail = comma ? "," : ""
        switch json {
        case .object(let object) where !object.isEmpty:
            emit(prefix + "{")
            let keys = object.keys.sorted()
            for (i, k) in keys.enumerated() {
                append(object[k]!, key: k, path: path.appending(k), depth: depth + 1, comma: i < keys.count - 1, changed: changed, to: &out)
            }
            emit("}" + tail)
        case .array(let array) where !array.isEmpty:
            emit(prefix + "[")
            for (i, element) in array.enumerated() {
                append(element, key: nil, path: path.appending(index: i), depth: depth + 1, comma: i < array.count - 1, changed: changed, to: &out)
            }
            emit("]" + tail)
        default:
            emit(prefix + json.jsonString + tail)
        }
    }
}
