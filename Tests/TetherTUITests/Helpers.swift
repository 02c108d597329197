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

/// Lets main-actor tasks run until `condition` holds (or about two seconds pass).
@MainActor
func waitUntil(_ condition: () -> Bool) async {
    for _ in 0..<2000 {
        if condition() { return }
        try? await Task.sleep(for: .milliseconds(1))
    }
}

struct TestError: Error, Equatable {
    let message: String
}
