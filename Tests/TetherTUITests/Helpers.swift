import Testing
import TetherTUI

/// Puts `widget` on a fresh test terminal and draws it once.
@MainActor
func show(_ widget: Widget, width: Int, height: Int) -> (Application, TestBackend) {
    let backend = TestBackend(width: width, height: height)
    let app = Application(root: widget, backend: backend)
    app.redraw()
    return (app, backend)
}

struct TestError: Error, Equatable {
    let message: String
}
