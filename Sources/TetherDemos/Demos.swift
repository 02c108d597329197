import TetherJSON
import TetherState

/// The demo ViewModels built into `tetherd` (docs/PROTOCOL.md lists them). Each is written with only the
/// public ViewModel API, so they double as its examples.
public enum Demos {
    /// Which instances each demo accepts and how long its idle rooms are kept (docs/DESIGN.md,
    /// "Room administration"): instances within the server's per-kind limit, except the clock,
    /// whose state is the time; load-test rooms (`bench`) and ballots (`vote`) expire. To-do lists
    /// and votes keep their actions' arguments in history, so they can be exported and replayed
    /// (`tether export`, `TestRoom.replay`); the rest keep a digest.
    public static let kinds: [ViewModelKind] = [
        ViewModelKind("counter", scope: .shared, Counter.self),
        ViewModelKind("clock", scope: .shared, Clock.self, instances: .none),
        ViewModelKind("login", scope: .perSession, Login.self),
        ViewModelKind("exchange", scope: .shared, Exchange.self),
        ViewModelKind("calculator", scope: .shared, Calculator.self),
        ViewModelKind("gallery", scope: .shared, Gallery.self),
        ViewModelKind("todo", scope: .shared, Todo.self).keepingArgumentsInHistory(),
        ViewModelKind("bench", scope: .shared, Bench.self, expireAfter: .days(1)),
        ViewModelKind("vote", scope: .shared, Vote.self, expireAfter: .days(30)).keepingArgumentsInHistory(),
    ]
}

