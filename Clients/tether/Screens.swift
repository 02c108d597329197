/// Which screen a room gets: by its kind (the part of the name before ':'), the inspector for
/// any other kind, or for every room with `tether inspect`.
@MainActor
enum Screens {
    /// Kinds with a screen of their own.
    static let kinds = ["counter", "clock", "login", "exchange", "calculator", "gallery", "todo", "vote"]

    static func kind(of room: String) -> String {
        String(room.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }

    static func make(for context: ScreenContext, inspector: Bool = false) -> any Screen {
        if inspector { return Inspector(context) }
        switch kind(of: context.room.name) {
        case "counter": return CounterScreen(context)
        case "clock": return ClockScreen(context)
        case "login": return LoginScreen(context)
        case "exchange": return ExchangeScreen(context)
        case "calculator": return CalculatorScreen(context)
        case "gallery": return GalleryScreen(context)
        case "todo": return TodoScreen(context)
        case "vote": return VoteScreen(context)
        default: return Inspector(context)
        }
    }
}
