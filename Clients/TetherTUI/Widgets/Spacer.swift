/// Empty room that stretches along `axis` and takes none across it: pushes its neighbours in a
/// stack apart (to center a row, or to keep a group at the top).
public final class Spacer: Widget {
    public let axis: Axis

    public init(_ axis: Axis) {
        self.axis = axis
    }

    public override func preferredLength(_ axis: Axis, cross: Int) -> Int? {
        axis == self.axis ? nil : 0
    }
}

extension Stack {
    /// `widgets` side by side from the left (a spacer takes the rest of the row).
    public static func row(_ widgets: [Widget], spacing: Int = 2) -> Stack {
        Stack(.horizontal, spacing: spacing, widgets + [Spacer(.horizontal)])
    }

    /// `widgets` side by side, centered.
    public static func centeredRow(_ widgets: [Widget], spacing: Int = 2) -> Stack {
        Stack(.horizontal, spacing: spacing, [Spacer(.horizontal)] + widgets + [Spacer(.horizontal)])
    }
}
