public struct Point: Hashable, Sendable {
    public var x: Int
    public var y: Int
    public init(x: Int, y: Int) {
        self.x = x
        self.y = y
    }
}

public struct Size: Hashable, Sendable {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

public enum Axis: Sendable {
    case vertical, horizontal
}

/// How much of a stack's length an item takes.
public enum Constraint: Hashable, Sendable {
    /// Exactly this many cells (less if there is not enough room).
    case length(Int)
    /// At least this many cells, growing like `fill(1)` when there is room.
    case min(Int)
    /// A share of what the fixed items leave, proportional to the weight: two `fill(1)` split
    /// evenly, `fill(2)` next to `fill(1)` takes two thirds.
    case fill(Int = 1)
    /// The widget's preferred length, or `fill(1)` when it has none.
    case auto
}

/// A rectangle of cells. Width and height are never negative.
public struct Rect: Hashable, Sendable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = Swift.max(0, width)
        self.height = Swift.max(0, height)
    }

    public static let zero = Rect(x: 0, y: 0, width: 0, height: 0)

    public var maxX: Int { x + width }
    public var maxY: Int { y + height }
    public var isEmpty: Bool { width == 0 || height == 0 }
    public var size: Size { Size(width: width, height: height) }

    public func contains(_ point: Point) -> Bool {
        point.x >= x && point.x < maxX && point.y >= y && point.y < maxY
    }

    /// The rectangle shrunk by `horizontal` cells on the left and right and `vertical` on top and bottom.
    public func inset(horizontal: Int = 0, vertical: Int = 0) -> Rect {
        Rect(x: x + horizontal, y: y + vertical, width: width - 2 * horizontal, height: height - 2 * vertical)
    }

    /// The rectangle shrunk by `amount` cells on every side.
    public func inset(by amount: Int) -> Rect {
        inset(horizontal: amount, vertical: amount)
    }

    public func intersection(_ other: Rect) -> Rect {
        let left = Swift.max(x, other.x)
        let top = Swift.max(y, other.y)
        return Rect(x: left, y: top, width: Swift.min(maxX, other.maxX) - left, height: Swift.min(maxY, other.maxY) - top)
    }

    /// Splits the rectangle along `axis` into one piece per constraint, in order, with `spacing`
    /// cells between pieces. Fixed lengths are served first, front to back; what is left is shared
    /// by `min` and `fill` items by weight (`auto` counts as `fill(1)` here).
    public func split(_ axis: Axis, _ constraints: [Constraint], spacing: Int = 0) -> [Rect] {
        guard !constraints.isEmpty else { return [] }
        let total = axis == .vertical ? height : width
        let gaps = Swift.max(0, spacing) * (constraints.count - 1)
        var remaining = Swift.max(0, total - gaps)

        var lengths = [Int](repeating: 0, count: constraints.count)
        var weights = [Int](repeating: 0, count: constraints.count)
        for (i, constraint) in constraints.enumerated() {
            switch constraint {
            case .length(let n):
                lengths[i] = Swift.min(Swift.max(0, n), remaining)
            case .min(let n):
                lengths[i] = Swift.min(Swift.max(0, n), remaining)
                weights[i] = 1
            case .fill(let w):
                weights[i] = Swift.max(0, w)
            case .auto:
                weights[i] = 1
            }
            remaining -= lengths[i]
        }
        // Cumulative rounding hands out every leftover cell and keeps the order stable.
        let totalWeight = weights.reduce(0, +)
        if totalWeight > 0 && remaining > 0 {
            var cumulative = 0
            var handedOut = 0
            for i in weights.indices where weights[i] > 0 {
                cumulative += weights[i]
                let upTo = remaining * cumulative / totalWeight
                lengths[i] += upTo - handedOut
                handedOut = upTo
            }
        }

        var rects: [Rect] = []
        var offset = axis == .vertical ? y : x
        for length in lengths {
            switch axis {
            case .vertical: rects.append(Rect(x: x, y: offset, width: width, height: length))
            case .horizontal: rects.append(Rect(x: offset, y: y, width: length, height: height))
            }
            offset += length + Swift.max(0, spacing)
        }
        return rects
    }
}
