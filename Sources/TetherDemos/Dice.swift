import TetherBinding
import TetherJSON
import TetherState

/// Dice that read chance and time through their context (`context.random`, `context.now`), so
/// their history replays exactly (`TestRoom.replay`). Registered only with `tetherd --test-kinds`,
/// as `dice`: tests of exports and replays.
public final class Dice: ViewModel {
    let rolls: ObservableList<Int>
    /// When the last roll was made, in milliseconds since 1970.
    let rolledAt: Observable<Int>
    private let context: ViewModelContext

    public init(context: ViewModelContext) {
        self.context = context
        rolls = context.list("rolls")
        rolledAt = context.property("rolledAt", 0)
    }

    public static let actions = ActionTable<Dice>()
        .on("roll") { model in
            var random = model.context.random
            model.rolls.append(Int.random(in: 1...6, using: &random))
            model.rolledAt.value = Int((model.context.now.timeIntervalSince1970 * 1000).rounded())
        }
}
