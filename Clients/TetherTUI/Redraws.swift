/// A widget property that marks the screen as needing a redraw when it changes to a different
/// value: `@Redraws public var title = ""`. Assigning an equal value draws nothing. Works only on
/// `Widget` subclasses (it reaches the widget through the enclosing-instance subscript); a
/// `didSet` on the property still runs, for extra work such as clamping; unlike on a plain
/// property, assigning the property inside its own `didSet` runs the `didSet` again, so guard it
/// (`if clamped != value { value = clamped }`).
@propertyWrapper
public struct Redraws<Value: Equatable> {
    private var value: Value

    public init(wrappedValue: Value) {
        value = wrappedValue
    }

    @available(*, unavailable, message: "@Redraws works only on properties of Widget subclasses")
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    @MainActor
    public static subscript<Owner: Widget>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, Self>
    ) -> Value {
        get { owner[keyPath: storageKeyPath].value }
        set {
            let oldValue = owner[keyPath: storageKeyPath].value
            owner[keyPath: storageKeyPath].value = newValue
            if oldValue != newValue { owner.setNeedsDisplay() }
        }
    }
}
