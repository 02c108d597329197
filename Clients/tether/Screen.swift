import TetherTUI

/// One screen: widgets bound to a room, and the shortcut keys it understands.
///
/// A screen only creates widgets, binds them to the room's observables (through its
/// `ScreenContext`), sets its key hints there, and wires user input to actions; the `Shell`
/// around it does the rest.
@MainActor
protocol Screen: AnyObject {
    /// The widgets, already bound to the room.
    var body: Widget { get }
    /// The widget that has the focus when the screen opens (nil: the first one Tab reaches).
    var initialFocus: Widget? { get }
    /// Keys no focused widget used; returns true when it handled the key.
    func handleKey(_ key: Key) -> Bool
    /// The focus moved to `widget`: a screen whose keys depend on the focus updates its hints.
    func focusDidChange(to widget: Widget?)
}

extension Screen {
    var initialFocus: Widget? { nil }
    func handleKey(_ key: Key) -> Bool { false }
    func focusDidChange(to widget: Widget?) {}
}
