/// A retained widget. Setting a property that changes its look marks the application's screen as
/// needing a redraw; the redraw itself is coalesced and done by the `Application`.
///
/// Subclasses override `render(in:into:)`, and as needed `preferredLength(_:cross:)`,
/// `handle(_:)`, `acceptsFocus` and `children`.
@MainActor
open class Widget {
    /// The container this widget was added to.
    public internal(set) weak var parent: Widget?
    /// Set on the root widget only.
    weak var application: Application?

    /// Hidden widgets are not drawn, take no room in a stack and cannot be focused.
    @Redraws public var isHidden = false

    /// Whether this widget has the keyboard focus; the application sets it.
    @Redraws public internal(set) var isFocused = false

    /// The area the widget was last drawn in.
    public private(set) var frame: Rect = .zero
    /// True when the last layout gave the widget no cells (a row too narrow for every button):
    /// Tab then skips it. False until it is first drawn.
    public private(set) var isSqueezedOut = false

    public init() {}

    /// Child widgets, in focus order.
    open var children: [Widget] { [] }

    /// Whether Tab can move the focus here.
    open var acceptsFocus: Bool { false }

    /// True for text inputs: while focused, plain letters are typed rather than taken as shortcuts (like `q`).
    open var capturesText: Bool { false }

    /// Preferred length along `axis` when `cross` cells are available on the other axis;
    /// nil means "as much as there is" (a stack treats it as `fill(1)`).
    open func preferredLength(_ axis: Axis, cross: Int) -> Int? { nil }

    /// Draws the widget into `area` of `buffer`; it must stay inside `area`.
    open func render(in area: Rect, into buffer: inout Buffer) {}

    /// Handles a key while focused, or a key that a focused widget inside it did not use;
    /// returns false to pass it on (to the parent, then the application).
    open func handle(_ key: Key) -> Bool { false }

    /// Records the frame and renders unless hidden. Containers call this on their children.
    public final func draw(in area: Rect, into buffer: inout Buffer) {
        frame = area
        isSqueezedOut = area.isEmpty
        guard !isHidden, !area.isEmpty else { return }
        render(in: area, into: &buffer)
    }

    /// Marks the screen as needing a redraw. Property setters call it; custom widgets call it too.
    public func setNeedsDisplay() {
        root.application?.setNeedsRedraw()
    }

    /// Runs an async handler on the main actor; a thrown error goes to the application's error handler.
    public func perform(_ action: @escaping @MainActor () async throws -> Void) {
        if let application = root.application {
            application.perform(action)
        } else {
            Task { @MainActor in try? await action() }
        }
    }

    var root: Widget {
        var widget = self
        while let parent = widget.parent { widget = parent }
        return widget
    }

    func adopt(_ child: Widget) {
        child.parent = self
        setNeedsDisplay()
    }

    func disown(_ child: Widget) {
        if child.parent === self { child.parent = nil }
        setNeedsDisplay()
    }

    /// Whether this widget or one of its descendants has the focus.
    public var containsFocus: Bool {
        isFocused || children.contains { $0.containsFocus }
    }
}
