import TetherBinding
import TetherClient
import TetherDemoContracts
import TetherTUI

/// `gallery` (shared): the picture and name of the current person, "2 of 3", and previous / next.
@MainActor
final class GalleryScreen: Screen {
    let body: Widget
    private let context: ScreenContext
    private let gallery: ContractRoom<GalleryContract>

    init(_ context: ScreenContext) {
        self.context = context
        let gallery = context.room(GalleryContract.self)
        self.gallery = gallery
        let picture = Label("")
        let name = Label("", style: Style(bold: true), alignment: .center)
        let position = Label("", style: Style(dim: true), alignment: .center)
        let previous = Button("< previous").onPress(context.action(gallery.previous))
        let next = Button("next >").onPress(context.action(gallery.next))

        context.bind(GalleryContract.Fields.picture, default: "") { picture.text = $0 }
        context.bind(GalleryContract.Fields.name, default: "") { name.text = $0 }
        let place = combineLatest(context.value(GalleryContract.Fields.index), context.value(GalleryContract.Fields.count))
        context.bind(place) { index, count in
            position.text = Self.position(index: index, count: count)
        }
        let pictureRow = Stack.centeredRow([picture])
        let stack = Stack(.vertical, [
            Spacer(.vertical), pictureRow, Label(), name, position, Label(), Stack.centeredRow([previous, next]), Spacer(.vertical),
        ])
        stack.setCollapsible(pictureRow)  // the picture gives way on a low terminal
        body = stack
        context.hints.value = ["n / → next", "p / ← previous"]
    }

    /// "2 of 3"; without the room's `count` (an older server), "no. 2".
    static func position(index: Int?, count: Int?) -> String {
        guard let index else { return "" }
        guard let count else { return "no. \(index + 1)" }
        return "\(index + 1) of \(count)"
    }

    func handleKey(_ key: Key) -> Bool {
        switch key {
        case .char("n"), .right: context.perform(gallery.next)
        case .char("p"), .left: context.perform(gallery.previous)
        default: return false
        }
        return true
    }
}
