import TetherTUI

/// `gallery` (shared): the picture and name of the current person, with previous / next.
@MainActor
final class GalleryScreen: Screen {
    let body: Widget
    let hints = "n / → next · p / ← previous"
    private let context: ScreenContext

    init(_ context: ScreenContext) {
        self.context = context
        let picture = Label("")
        let name = Label("", style: Style(bold: true), alignment: .center)
        let position = Label("", style: Style(dim: true), alignment: .center)
        let previous = Button("< previous").onPress(context.action("previous"))
        let next = Button("next >").onPress(context.action("next"))

        context.bind("/picture", as: String.self, default: "") { picture.text = $0 }
        context.bind("/name", as: String.self, default: "") { name.text = $0 }
        context.bind("/index", as: Int.self, default: 0) { position.text = "#\($0 + 1)" }
        body = Stack(.vertical, spacing: 1, [
            Spacer(.vertical), centeredRow([picture]), name, position, centeredRow([previous, next]), Spacer(.vertical),
        ])
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char("n"), .right: context.perform("next")
        case .char("p"), .left: context.perform("previous")
        default: return false
        }
        return true
    }
}
