/// Keeps the last frame shown and sends a backend only the cells that differ from it.
@MainActor
public final class Renderer {
    public let backend: any Backend
    private var previous: Buffer?

    public init(backend: any Backend) {
        self.backend = backend
    }

    /// Forgets what is on screen: the next frame clears it and draws everything.
    public func reset() {
        previous = nil
    }

    /// Shows `frame`: clears and redraws in full when the size changed, otherwise writes the diff.
    /// Always flushes, so each call is one frame.
    public func draw(_ frame: Buffer) {
        if previous?.size != frame.size {
            backend.clear()
            previous = Buffer(width: frame.width, height: frame.height)
        }
        let last = previous!
        var updates: [CellUpdate] = []
        for y in 0..<frame.height {
            for x in 0..<frame.width {
                let cell = frame[x, y]
                // The right half of a wide character is drawn by its left half. Buffers keep wide
                // characters whole, so a changed half always comes with a changed neighbour that is written.
                if cell.isContinuation || cell == last[x, y] { continue }
                updates.append(CellUpdate(x: x, y: y, cell: cell))
            }
        }
        if !updates.isEmpty { backend.draw(updates) }
        backend.setCursor(frame.cursor)
        backend.flush()
        previous = frame
    }
}
